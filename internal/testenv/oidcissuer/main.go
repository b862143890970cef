// Command oidcissuer is a minimal OpenID Connect issuer for tests: a
// process of its own, as a real identity provider is, serving its
// discovery document and key set on loopback and minting tokens on
// request with keys that never leave it.
//
// It prints "url http://127.0.0.1:PORT" on its first line once it
// listens. POST /mint with {"alg": "RS256"|"ES256", "kid": "...",
// "header": {...}, "claims": {...}} answers the signed token; "header"
// adds or replaces header fields (crit, typ). GET /hits answers how many
// times the key set was fetched. POST /hold makes the key set's answers
// wait until POST /release (a slow issuer, without a clock); GET /held
// answers once a fetch of the key set is waiting so. It stops on SIGTERM or
// when its standard input closes (its test ended).
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"

	"github.com/golang-jwt/jwt/v5"
)

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		log.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	fmt.Printf("url %s\n", url)
	log.Fatal(http.Serve(l, handler(url, rsaKey, ecKey)))
}

func handler(url string, rsaKey *rsa.PrivateKey, ecKey *ecdsa.PrivateKey) http.Handler {
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	ecRaw, err := ecKey.PublicKey.Bytes()
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": url, "jwks_uri": url + "/keys",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	})
	var hits atomic.Int64
	mux.HandleFunc("GET /hits", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, hits.Load())
	})
	var gate struct {
		sync.Mutex
		open chan struct{} // closed by /release; nil when not holding
	}
	held := make(chan struct{}, 1024) // one per fetch waiting at the gate
	mux.HandleFunc("POST /hold", func(w http.ResponseWriter, r *http.Request) {
		gate.Lock()
		defer gate.Unlock()
		if gate.open == nil {
			gate.open = make(chan struct{})
		}
	})
	mux.HandleFunc("POST /release", func(w http.ResponseWriter, r *http.Request) {
		gate.Lock()
		defer gate.Unlock()
		if gate.open != nil {
			close(gate.open)
			gate.open = nil
		}
	})
	mux.HandleFunc("GET /held", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-held:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		gate.Lock()
		open := gate.open
		gate.Unlock()
		if open != nil {
			held <- struct{}{}
			select {
			case <-open:
			case <-r.Context().Done():
				return
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{
			{"kid": "r1", "kty": "RSA", "use": "sig", "alg": "RS256", "n": b64(rsaKey.N.Bytes()), "e": b64(big.NewInt(int64(rsaKey.E)).Bytes())},
			{"kid": "e1", "kty": "EC", "use": "sig", "alg": "ES256", "crv": "P-256", "x": b64(ecRaw[1:33]), "y": b64(ecRaw[33:65])},
		}})
	})
	mux.HandleFunc("POST /mint", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Alg    string         `json:"alg"`
			Kid    string         `json:"kid"`
			Header map[string]any `json:"header"`
			Claims jwt.MapClaims  `json:"claims"`
		}
		dec := json.NewDecoder(r.Body)
		dec.UseNumber()
		if err := dec.Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var method jwt.SigningMethod
		var key any
		switch req.Alg {
		case "RS256":
			method, key = jwt.SigningMethodRS256, rsaKey
		case "ES256":
			method, key = jwt.SigningMethodES256, ecKey
		default:
			http.Error(w, "alg: RS256 or ES256", http.StatusBadRequest)
			return
		}
		t := jwt.NewWithClaims(method, req.Claims)
		t.Header["kid"] = req.Kid
		for k, v := range req.Header {
			t.Header[k] = v
		}
		s, err := t.SignedString(key)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, s)
	})
	return mux
}
