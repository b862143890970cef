package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// openapiCheck holds a served API's answers to the OpenAPI document it
// serves, as kin-openapi reads it.
type openapiCheck struct {
	router routers.Router
}

// checkOpenAPI has every answer s gives to do and send from now on
// checked against the document s serves at /v1/openapi.yaml: its status
// described for the operation and its body the operation's schema. The
// query/api tests hold their fakes' answers to it; this holds a real
// node's (a UTXO chain's transactions, say).
func (s *served) checkOpenAPI(tb testing.TB) {
	tb.Helper()
	resp, err := http.Get(s.base + "/v1/openapi.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		tb.Fatalf("GET /v1/openapi.yaml: %d %v", resp.StatusCode, err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(text)
	if err == nil {
		err = doc.Validate(context.Background())
	}
	if err != nil {
		tb.Fatalf("openapi.yaml: %v", err)
	}
	doc.Servers = nil // route by path alone
	router, err := legacy.NewRouter(doc)
	if err != nil {
		tb.Fatal(err)
	}
	s.openapi = &openapiCheck{router: router}
}

// check checks an answer of s against its document, when checkOpenAPI
// asked for it.
func (s *served) check(tb testing.TB, req *http.Request, resp *http.Response, body []byte) {
	tb.Helper()
	if s.openapi == nil {
		return
	}
	route, params, err := s.openapi.router.FindRoute(req)
	if err == nil {
		err = openapi3filter.ValidateResponse(req.Context(), &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
			Status:                 resp.StatusCode,
			Header:                 resp.Header,
			Body:                   io.NopCloser(bytes.NewReader(body)),
			Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
		})
	}
	if err != nil {
		tb.Errorf("%s %s answered %d against openapi.yaml: %v\nbody: %s", req.Method, req.URL.Path, resp.StatusCode, err, body)
	}
}
