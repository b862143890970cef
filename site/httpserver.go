package site

import (
	"log/slog"
	"net/http"
	"time"
)

// Limits of the http.Server that HTTPServer returns. Downloads extend the
// write deadline by their size (Config.MinRate), everything else must be
// answered within WriteTimeout.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 30 * time.Second
	WriteTimeout      = 2 * time.Minute
	IdleTimeout       = 2 * time.Minute
	MaxHeaderBytes    = 32 << 10
)

// HTTPServer returns an http.Server for h with bounded timeouts and header
// size, so that slow or hostile clients cannot hold connections open.
func HTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
