package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/wharfhq/wharf/query/api"
)

// openapiDoc is openapi.yaml loaded and validated by kin-openapi, with a
// router over its paths; loaded once per test binary.
var openapiDoc = sync.OnceValues(func() (*openapiSpec, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.OpenAPIYAML)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	// Route by path alone: the test servers listen on other ports than
	// the document's example server.
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &openapiSpec{doc: doc, router: router}, nil
})

type openapiSpec struct {
	doc    *openapi3.T
	router routers.Router
}

// validated wraps h so that every response it gives is checked against
// openapi.yaml by kin-openapi: a described operation's response by its
// status (an undescribed status fails) and schema; any other JSON error
// (an unknown path, a method a path does not take) by the Error schema.
// Every test that talks to the API through newEnv goes through it.
func validated(t testing.TB, h http.Handler) http.Handler {
	spec, err := openapiDoc()
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		body := rec.Body.Bytes()
		w.Write(body)
		if err := spec.check(r, rec.Code, rec.Header(), body); err != nil {
			t.Errorf("%s %s answered %d against openapi.yaml: %v\nbody: %s", r.Method, r.URL, rec.Code, err, body)
		}
	})
}

func (s *openapiSpec) check(r *http.Request, status int, header http.Header, body []byte) error {
	route, params, err := s.router.FindRoute(r)
	var notRouted *routers.RouteError
	switch {
	case err == nil:
		return openapi3filter.ValidateResponse(r.Context(), &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route},
			Status:                 status,
			Header:                 header,
			Body:                   io.NopCloser(bytes.NewReader(body)),
			Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
		})
	case errors.As(err, &notRouted): // no such path, or not this method
	default:
		return err
	}
	// Beside the API, not described: the health check and the metrics.
	if r.URL.Path == "/healthz" || r.URL.Path == "/metrics" {
		return nil
	}
	if ct, _, _ := mime.ParseMediaType(header.Get("Content-Type")); ct != "application/json" {
		return errors.New("an error that is not JSON: Content-Type " + header.Get("Content-Type"))
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return err
	}
	return s.doc.Components.Schemas["Error"].Value.VisitJSON(v, openapi3.MultiErrors())
}
