package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/wharfhq/wharf/query/api"
	"github.com/wharfhq/wharf/query/store"
)

type spec struct {
	Paths      map[string]map[string]any `yaml:"paths"`
	Components struct {
		Schemas map[string]struct {
			Required   []string       `yaml:"required"`
			Properties map[string]any `yaml:"properties"`
		} `yaml:"schemas"`
	} `yaml:"components"`
}

// served fetches /v1/openapi.yaml from a running handler.
func served(t *testing.T) (spec, string, http.Handler) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "addrd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := api.New(api.Config{Store: db, Chains: []string{"ETH"}, Syntax: evmSyntax("ETH")})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/openapi.yaml", nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/yaml" {
		t.Fatalf("GET /v1/openapi.yaml: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	var s spec
	if err := yaml.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	return s, rec.Body.String(), h
}

// TestOpenAPIRoutes holds the route table and the description together:
// every route is described and every described operation is routed.
func TestOpenAPIRoutes(t *testing.T) {
	s, _, h := served(t)
	var described []string
	for path, ops := range s.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			described = append(described, strings.ToUpper(method)+" "+path)
		}
	}
	routed := append(api.Patterns(), api.OpenAPIPattern)
	slices.Sort(described)
	slices.Sort(routed)
	if !slices.Equal(described, routed) {
		t.Fatalf("openapi.yaml describes\n\t%s\nthe handler routes\n\t%s", strings.Join(described, "\n\t"), strings.Join(routed, "\n\t"))
	}
	// And the mux really serves each (not 404 or 405), with made-up values.
	fill := strings.NewReplacer("{chain}", "ETH", "{address}", "0x"+strings.Repeat("a", 40), "{hash}", "0x"+strings.Repeat("b", 64))
	for _, op := range described {
		method, path, _ := strings.Cut(op, " ")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, fill.Replace(path), nil))
		if rec.Code == 404 && strings.Contains(rec.Body.String(), "no such path") || rec.Code == 405 {
			t.Errorf("%s: %d %s", op, rec.Code, rec.Body)
		}
	}
}

// TestOpenAPISchemas holds the JSON field names of the bodies and the
// schemas together: the same names, all required.
func TestOpenAPISchemas(t *testing.T) {
	s, text, _ := served(t)
	for name, typ := range api.BodyTypes {
		t.Run(name, func(t *testing.T) {
			schema, ok := s.Components.Schemas[name]
			if !ok {
				t.Fatalf("no schema %s", name)
			}
			var fields, always []string // always: those not omitempty, which the schema requires
			for f := range typ.Fields() {
				tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
				fields = append(fields, tag)
				if opts != "omitempty" {
					always = append(always, tag)
				}
			}
			var props []string
			for p := range schema.Properties {
				props = append(props, p)
			}
			slices.Sort(fields)
			slices.Sort(always)
			slices.Sort(props)
			req := slices.Sorted(slices.Values(schema.Required))
			if !slices.Equal(fields, props) || !slices.Equal(always, req) {
				t.Fatalf("Go %s has %v; schema properties %v, required %v", typ, fields, props, req)
			}
		})
	}
	for _, name := range api.CompositeSchemas {
		if schema, ok := s.Components.Schemas[name]; !ok || len(schema.Properties) > 0 {
			t.Errorf("schema %s: %v, want one made of others", name, schema)
		}
	}
	if len(api.BodyTypes)+len(api.CompositeSchemas) != len(s.Components.Schemas) {
		t.Errorf("%d schemas for %d body types and %d composites", len(s.Components.Schemas), len(api.BodyTypes), len(api.CompositeSchemas))
	}
	for _, want := range []string{
		`requester is not subscribed for address '<address>'`, `"status":"Unauthenticated"`,
		"3→400", "5→404", "7→403", "8→429", "12→501", "13→500", "14→503", "16→401", "405",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("openapi.yaml does not mention %q", want)
		}
	}
}

// TestOpenAPIServers: the served document names the address it was asked
// at (it said http://127.0.0.1:8090 on any port); a Host that is not a
// plain host[:port] gets the default.
func TestOpenAPIServers(t *testing.T) {
	_, _, h := served(t)
	tests := []struct{ host, want string }{
		{"127.0.0.1:18091", "http://127.0.0.1:18091"},
		{"addrd.example.com", "http://addrd.example.com"},
		{"[::1]:8090", "http://[::1]:8090"},
		{"evil.example.com\n  - url: x", "http://127.0.0.1:8090"},
		{"a b", "http://127.0.0.1:8090"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/v1/openapi.yaml", nil)
		r.Host = tt.host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var doc struct {
			Servers []struct{ URL string } `yaml:"servers"`
		}
		if err := yaml.Unmarshal(rec.Body.Bytes(), &doc); err != nil || len(doc.Servers) != 1 || doc.Servers[0].URL != tt.want {
			t.Errorf("Host %q: servers %+v (%v), want %s", tt.host, doc.Servers, err, tt.want)
		}
	}
}
