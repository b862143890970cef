package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/urfave/cli/v2"
	"golang.org/x/time/rate"

	"github.com/wharfhq/wharf/internal/buildinfo"
	"github.com/wharfhq/wharf/internal/clientip"
	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/site"
	"github.com/wharfhq/wharf/site/auth"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve a published tree: short URLs, downloads, signatures, the install script and the page",
		Description: `Serves STORE (a directory, or s3://bucket/prefix with --s3-endpoint and
the AWS_* credentials) over HTTP. Downloads that are not public need an
access token (wharf token create) or an organisation API key (wharf
apikey create), both kept in --db. A release published while the server
runs is served without a restart.

Example:
   wharf serve --store ./public --listen 127.0.0.1:8080 --db wharf.db
   wharf serve --store s3://releases --s3-endpoint http://127.0.0.1:9000 --presign`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "store", Value: "./public", Usage: "`STORE`: a directory or s3://bucket/prefix", EnvVars: []string{"WHARF_STORE"}},
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", Usage: "`ADDR` to listen on", EnvVars: []string{"WHARF_LISTEN"}},
			dbFlag(),
			&cli.IntFlag{Name: "db-conns", Value: auth.DefaultPoolConns, Usage: "PostgreSQL only: at most `N` connections to the auth database; more requests wait for one", EnvVars: []string{"WHARF_DB_CONNS"}},
			&cli.DurationFlag{Name: "db-wait", Value: auth.DefaultPoolWait, Usage: "PostgreSQL only: how long (`DURATION`) a request waits for a connection before it is answered 503 with Retry-After", EnvVars: []string{"WHARF_DB_WAIT"}},
			&cli.BoolFlag{Name: "presign", Usage: "answer downloads from S3 with a 302 to a short-lived presigned URL", EnvVars: []string{"WHARF_PRESIGN"}},
			&cli.DurationFlag{Name: "presign-expiry", Value: site.DefaultPresignExpiry, Usage: "how long (`DURATION`) a presigned URL is valid: it keeps working that long after its key is revoked", EnvVars: []string{"WHARF_PRESIGN_EXPIRY"}},
			&cli.StringFlag{Name: "s3-endpoint", Usage: "S3 API `ENDPOINT` for MinIO and other non-AWS stores: a URL (http://127.0.0.1:9000), or host:port for HTTPS", EnvVars: []string{"WHARF_S3_ENDPOINT"}},
			&cli.StringFlag{Name: "base-url", Usage: "public `URL` of the server for the page's commands (default: from each request)", EnvVars: []string{"WHARF_BASE_URL"}},
			&cli.StringFlag{Name: "session-secret", Usage: "`SECRET` (32+ bytes) signing browser sessions; default: random, so logins end with a restart", EnvVars: []string{"WHARF_SESSION_SECRET"}},
			&cli.StringFlag{Name: "rate-ip", Value: "50/s", Usage: "requests per client address, `RATE` = N/s, N/m or N/h, in bursts of up to N (0: no limit)", EnvVars: []string{"WHARF_RATE_IP"}},
			&cli.StringFlag{Name: "rate-key", Value: "10/s", Usage: "downloads per API key or user, `RATE` = N/s, N/m or N/h, in bursts of up to N (0: no limit)", EnvVars: []string{"WHARF_RATE_KEY"}},
			&cli.DurationFlag{Name: "refresh", Value: time.Second, Usage: "how often (`DURATION`) the manifest and pointers are checked for a new release", EnvVars: []string{"WHARF_REFRESH"}},
			&cli.DurationFlag{Name: "shutdown-timeout", Aliases: []string{"shutdown-grace"}, Value: 30 * time.Second, Usage: "how long (`DURATION`) downloads in flight may finish after SIGTERM (--shutdown-grace is the old name)", EnvVars: []string{"WHARF_SHUTDOWN_TIMEOUT", "WHARF_SHUTDOWN_GRACE"}},
			&cli.StringSliceFlag{Name: "trusted-proxy", Usage: "`CIDR` of a reverse proxy whose X-Forwarded-For names the client (repeatable; a bare address is itself alone)", EnvVars: []string{"WHARF_TRUSTED_PROXY"}},
			&cli.StringFlag{Name: "metrics-listen", Usage: "`ADDR` to serve /metrics on instead of the public listener", EnvVars: []string{"WHARF_METRICS_LISTEN"}},
			&cli.StringFlag{Name: "oidc-issuer", Usage: "also accept bearer tokens of this OpenID Connect issuer `URL` for existing users", EnvVars: []string{"WHARF_OIDC_ISSUER"}},
			&cli.StringFlag{Name: "oidc-audience", Usage: "`AUDIENCE` (client id) external tokens must be issued for; required with --oidc-issuer", EnvVars: []string{"WHARF_OIDC_AUDIENCE"}},
			&cli.StringFlag{Name: "oidc-user-claim", Usage: "`CLAIM` of an external token naming the wharf user (default email, which must be verified: email_verified true)", EnvVars: []string{"WHARF_OIDC_USER_CLAIM"}},
		}, shell.LogFlags("WHARF")...),
		Action: serve,
	}
}

func serve(c *cli.Context) error {
	if c.NArg() != 0 {
		return fmt.Errorf("serve: unexpected argument %q (the tree is --store)", c.Args().First())
	}
	if u := c.String("base-url"); u != "" {
		if err := publish.CheckBaseURL(u); err != nil {
			return fmt.Errorf("serve: --base-url: %w", err)
		}
	}
	ctx, stop := shell.SignalContext(c.Context)
	defer stop()
	log, closeLog, err := shell.NewLogger(c.App.ErrWriter, c.String("log-level"), c.String("log-format"))
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer closeLog()
	rateIP, err := shell.ParseRate(c.String("rate-ip"))
	if err != nil {
		return shell.Usagef("serve: --rate-ip %q: %w", c.String("rate-ip"), err)
	}
	rateKey, err := shell.ParseRate(c.String("rate-key"))
	if err != nil {
		return shell.Usagef("serve: --rate-key %q: %w", c.String("rate-key"), err)
	}
	if n := c.Int("db-conns"); n < 1 {
		return shell.Usagef("serve: --db-conns %d: want at least 1", n)
	}
	if d := c.Duration("db-wait"); d <= 0 {
		return shell.Usagef("serve: --db-wait %s: want more than 0", d)
	}
	if d := c.Duration("presign-expiry"); d <= 0 || d > 7*24*time.Hour {
		return shell.Usagef("serve: --presign-expiry %s: want more than 0 and at most 168h (S3's limit)", d)
	}
	proxies, err := clientip.Parse(c.StringSlice("trusted-proxy"))
	if err != nil {
		return shell.Usagef("serve: --trusted-proxy: %w", err)
	}

	// The port first: a taken one is reported before anything (the
	// database) is created.
	ln, err := shell.Listen(c, "listen")
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer ln.Close()
	var mln net.Listener
	if c.String("metrics-listen") != "" {
		if mln, err = shell.Listen(c, "metrics-listen"); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		defer mln.Close()
	}
	st, closeStore, err := openStore(ctx, c.String("store"), storeOptions{S3Endpoint: c.String("s3-endpoint"), Serve: true})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer closeStore()
	if ch, ok := st.(publish.Checker); ok {
		if err := ch.Check(ctx); err != nil {
			log.Warn("the store is not available; /healthz and downloads answer 503 until it is", slog.String("store", c.String("store")), slog.Any("err", err))
		}
	}
	var oidc *auth.OIDC
	if iss := c.String("oidc-issuer"); iss != "" {
		oidc = &auth.OIDC{Issuer: iss, Audience: c.String("oidc-audience"), UserClaim: c.String("oidc-user-claim")}
		if err := oidc.Check(); err != nil {
			return shell.Usagef("serve: %w", err)
		}
	}
	db, err := openDB(ctx, c, true)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer db.Close()
	db.OIDC = oidc
	db.SetPool(c.Int("db-conns"), c.Duration("db-wait"))

	secret := []byte(c.String("session-secret"))
	if len(secret) == 0 {
		secret = make([]byte, 32)
		rand.Read(secret)
		log.Warn("no --session-secret: browser logins end when the server restarts")
	}
	page, err := site.NewPage(site.PageConfig{Store: st, Auth: db, Secret: secret, Logger: log, BaseURL: c.String("base-url"), TrustedProxies: proxies})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildinfo.Read().Collector("wharf"))
	srv, err := site.New(site.Config{
		Store:            st,
		Auth:             db,
		Sessions:         page,
		Page:             page,
		Logger:           log,
		Presign:          c.Bool("presign"),
		PresignExpiry:    c.Duration("presign-expiry"),
		Metrics:          reg,
		RefreshInterval:  c.Duration("refresh"),
		RateIP:           rate.Limit(rateIP.PerSecond),
		BurstIP:          rateIP.Burst,
		RateKey:          rate.Limit(rateKey.PerSecond),
		BurstKey:         rateKey.Burst,
		TrustedProxies:   proxies,
		MetricsElsewhere: c.String("metrics-listen") != "",
	})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	grace := c.Duration("shutdown-timeout")
	var metrics chan error
	if mln != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", srv.MetricsHandler())
		metrics = make(chan error, 1)
		go func() { metrics <- shell.Serve(ctx, site.HTTPServer(mux, log), mln, grace) }()
		fmt.Fprintf(c.App.Writer, "metrics on http://%s/metrics\n", mln.Addr())
	}
	fmt.Fprintf(c.App.Writer, "serving %s on http://%s\n", c.String("store"), ln.Addr())
	log.Info("serving", slog.String("store", c.String("store")), slog.String("addr", ln.Addr().String()), slog.Bool("presign", c.Bool("presign")))
	err = shell.Serve(ctx, site.HTTPServer(srv, log), ln, grace)
	if metrics != nil {
		stop() // the metrics listener ends with the server
		if merr := <-metrics; err == nil {
			err = merr
		}
	}
	if err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// dbFlag is the --db flag every command of the auth database takes.
func dbFlag() cli.Flag {
	return &cli.StringFlag{Name: "db", Value: "wharf.db", Usage: "auth `DB`: a SQLite file or a postgres:// DSN", EnvVars: []string{"WHARF_DB"}}
}

// withDB opens --db around an admin command. Its flags may follow its
// arguments, as in `wharf org create acme --level full` (shell.Setup lets
// every command take them so).
func withDB(f func(context.Context, *cli.Context, *auth.DB) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		path := strings.Join(shell.CommandPath(c), " ")
		db, err := openDB(c.Context, c, false)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer db.Close()
		return f(c.Context, c, db)
	}
}
