package devchain

// Serving JSON-RPC over HTTP on loopback, stopped and restarted by tests to
// play a node that stops answering.

import (
	"fmt"
	"net"
	"net/http"
	"time"
)

// serve serves JSON-RPC on ln until StopHTTP or Close.
func (d *Chain) serve(ln net.Listener) {
	srv := &http.Server{Handler: d.handler, ReadHeaderTimeout: 10 * time.Second}
	d.srvMu.Lock()
	d.srv = srv
	d.srvMu.Unlock()
	go srv.Serve(ln) // returns http.ErrServerClosed on StopHTTP or Close
}

// StopHTTP stops serving JSON-RPC and drops open connections, as a node
// that goes away; the chain itself keeps running.
func (d *Chain) StopHTTP() error {
	d.srvMu.Lock()
	defer d.srvMu.Unlock()
	if d.srv == nil {
		return nil
	}
	err := d.srv.Close()
	d.srv = nil
	return err
}

// StartHTTP serves JSON-RPC again on the same address after StopHTTP.
func (d *Chain) StartHTTP() error {
	d.srvMu.Lock()
	running := d.srv != nil
	d.srvMu.Unlock()
	if running {
		return nil
	}
	ln, err := net.Listen("tcp", d.addr)
	if err != nil {
		return fmt.Errorf("dev chain: listen again: %w", err)
	}
	d.serve(ln)
	return nil
}
