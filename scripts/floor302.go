//go:build ignore

// floor302 is the Go floor of wharf serve's short-URL redirects: a bare
// net/http server that answers every request with the 302 wharf answers
// /x86/engine with (Location, Cache-Control, an empty body), nothing else.
// What it reaches is what any Go server reaches on this machine; wharf's
// rate over it is what wharf's own work costs. scripts/bench-serve.sh
// builds and runs it:
//
//	go build -o floor302 scripts/floor302.go
//	./floor302 -listen 127.0.0.1:8081 -location /bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz
package main

import (
	"flag"
	"log"
	"net/http"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "address to listen on")
	location := flag.String("location", "/", "the Location of the 302")
	flag.Parse()
	loc := []string{*location}
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hd := w.Header()
		hd["Location"] = loc
		hd["Cache-Control"] = []string{"no-cache"}
		hd["Content-Length"] = []string{"0"}
		w.WriteHeader(http.StatusFound)
	})
	srv := &http.Server{Addr: *listen, Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	log.Fatal(srv.ListenAndServe())
}
