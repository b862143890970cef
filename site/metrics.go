package site

import (
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus collectors.
type metrics struct {
	requests *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight prometheus.Gauge
	// downloads counts artifact downloads by artifact, build and the
	// organisations of the credential ("anonymous" for public ones).
	downloads *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_http_requests_total",
			Help: "HTTP requests answered, by route and status code.",
		}, []string{"route", "code"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_http_response_bytes_total",
			Help: "Response body bytes sent, by route.",
		}, []string{"route"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wharf_http_request_duration_seconds",
			Help:    "Time to answer a request, by route (downloads include the transfer).",
			Buckets: []float64{.0005, .001, .005, .01, .05, .1, .5, 1, 5, 30, 120, 600},
		}, []string{"route"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wharf_http_requests_in_flight",
			Help: "Requests being answered.",
		}),
		downloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_downloads_total",
			Help: "Artifact downloads answered (GET 200, 206 or a presigned 302), by artifact, build and organisations of the credential (anonymous: none).",
		}, []string{"artifact", "build", "org"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.bytes, m.duration, m.inflight, m.downloads} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// recorder notes the status and body size of a response. It forwards
// ReadFrom, so a download from a file still goes out with sendfile(2).
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	var n int64
	var err error
	if rf, ok := r.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(struct{ io.Writer }{r.ResponseWriter}, src)
	}
	r.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (write deadlines).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush forwards to the underlying writer.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
