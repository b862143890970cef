package api

// Answers are written without a store turn: what a handler writes while
// it holds one is kept, and written once the turn is given back, so that
// a client that reads its answer slowly, or never, holds a connection of
// its own and nothing the other requesters need.

import (
	"bytes"
	"net/http"
)

// heldWriter keeps what is written while its request holds a store turn
// (reqInfo.turn) and writes it through once the turn is given back
// (flush).
type heldWriter struct {
	w      http.ResponseWriter
	ri     *reqInfo
	status int // the status held, 0 when none
	sent   bool
	buf    bytes.Buffer
}

func (h *heldWriter) Header() http.Header { return h.w.Header() }

func (h *heldWriter) WriteHeader(status int) {
	if h.sent || h.status != 0 {
		return
	}
	h.status = status
	if !h.ri.turn {
		h.flush()
	}
}

func (h *heldWriter) Write(b []byte) (int, error) {
	if h.status == 0 && !h.sent {
		h.status = http.StatusOK
	}
	if h.ri.turn {
		return h.buf.Write(b)
	}
	if err := h.flush(); err != nil {
		return 0, err
	}
	return h.w.Write(b)
}

// Flush writes through what is held and flushes the connection, unless
// the request holds a turn.
func (h *heldWriter) Flush() {
	if h.ri.turn {
		return
	}
	if h.flush() == nil {
		http.NewResponseController(h.w).Flush()
	}
}

// flush writes what is held: the status, then the bytes.
func (h *heldWriter) flush() error {
	if !h.sent && h.status != 0 {
		h.sent = true
		h.w.WriteHeader(h.status)
	}
	if h.buf.Len() == 0 {
		return nil
	}
	_, err := h.w.Write(h.buf.Bytes())
	h.buf.Reset()
	return err
}

func (h *heldWriter) Unwrap() http.ResponseWriter { return h.w }
