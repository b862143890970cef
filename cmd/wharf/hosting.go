package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/site/hosting"
)

func hostingCommand() *cli.Command {
	configFlag := &cli.StringFlag{Name: "config", Usage: "release contents `FILE` (wharf.toml), for the access classes; default: the built-in artifacts", EnvVars: []string{"WHARF_CONFIG"}}
	// The tree's history: a name is public only if the config says so and
	// every published release did.
	historyFlags := []cli.Flag{
		&cli.StringFlag{Name: "manifest", Usage: "the tree's releases.json `FILE` (every release's access classes)", EnvVars: []string{"WHARF_HOSTING_MANIFEST"}},
		&cli.StringFlag{Name: "store", Usage: "read releases.json from `STORE` (a directory or s3://bucket/prefix)", EnvVars: []string{"WHARF_STORE"}},
		&cli.StringFlag{Name: "s3-endpoint", Usage: "S3 API `ENDPOINT` of --store (MinIO and other non-AWS stores)", EnvVars: []string{"WHARF_S3_ENDPOINT"}},
		&cli.BoolFlag{Name: "config-only", Usage: "no manifest: take the access classes from the config alone (opens the old builds of a name the config now calls public)", EnvVars: []string{"WHARF_HOSTING_CONFIG_ONLY"}},
	}
	proxyFlags := func(listenUsage string) []cli.Flag {
		return append([]cli.Flag{
			&cli.StringFlag{Name: "root", Required: true, Usage: "the published `DIR` as the proxy sees it (absolute)", EnvVars: []string{"WHARF_HOSTING_ROOT"}},
			&cli.StringFlag{Name: "upstream", Required: true, Usage: "wharf serve's `URL` as the proxy reaches it", EnvVars: []string{"WHARF_HOSTING_UPSTREAM"}},
			&cli.StringFlag{Name: "listen", Usage: listenUsage, EnvVars: []string{"WHARF_HOSTING_LISTEN"}},
			&cli.StringFlag{Name: "server-name", Usage: "host `NAME` the site answers for", EnvVars: []string{"WHARF_HOSTING_SERVER_NAME"}},
			configFlag,
			&cli.BoolFlag{Name: "pin-latest", Usage: "write the versions latest and preview name now into the configuration: their short URLs at a return's cost, but a new release is followed only once this is run again and the proxy reloaded (after every publish)", EnvVars: []string{"WHARF_HOSTING_PIN_LATEST"}},
		}, historyFlags...)
	}
	return &cli.Command{
		Name:  "hosting",
		Usage: "print what serves a published tree without wharf streaming it: nginx or Caddy config, S3 bucket policy",
		Description: `The bytes come from nginx, Caddy or the bucket; wharf serve only
decides who may have the non-public ones. See docs/hosting.md.`,
		Subcommands: []*cli.Command{
			{
				Name:  "nginx",
				Usage: "print an nginx config (for conf.d/): static files with sendfile, wharf's auth_request for non-public artifacts",
				Description: `Public artifacts, signatures, checksums and pointers are served by nginx
alone; every other artifact only after wharf serve's auth endpoint
answered 204 for the request's credentials (401 and 403 come from wharf).
Short URLs of a version are resolved by nginx; latest and preview by
wharf (kept a second). Run it again when an artifact is added or changes
access class.

Example:
   wharf hosting nginx --root /srv/wharf/public --upstream http://127.0.0.1:8080 \
       --listen 80 --server-name dl.example.com > /etc/nginx/conf.d/wharf.conf
   nginx -t && nginx -s reload`,
				Flags: append(proxyFlags("`ADDR` nginx listens on (default 80)"),
					&cli.StringFlag{Name: "cache-dir", Value: "/var/cache/nginx/wharf", Usage: "`DIR` where nginx keeps wharf's latest/preview redirects for a second", EnvVars: []string{"WHARF_HOSTING_CACHE_DIR"}},
					&cli.StringFlag{Name: "auth-cache", Value: "/run/nginx-wharf-auth", Usage: "`DIR` (tmpfs: its keys hold credentials) where nginx keeps wharf's allowed answers a tenth of a second; off asks wharf for every download", EnvVars: []string{"WHARF_HOSTING_AUTH_CACHE"}},
					&cli.StringFlag{Name: "access-log", Value: "/var/log/nginx/access.log", Usage: "nginx's access log `FILE` (written without the basic-auth user, which holds API keys)", EnvVars: []string{"WHARF_HOSTING_ACCESS_LOG"}},
					&cli.StringFlag{Name: "rate-key", Value: "10/s", Usage: "downloads per API key or user wharf allowed, counted by nginx (its cached answers too): wharf serve's --rate-key, `RATE` = N/s, N/m or N/h (0: no limit)", EnvVars: []string{"WHARF_HOSTING_RATE_KEY"}}),
				Action: func(c *cli.Context) error { return hostingProxy(c, hosting.Nginx) },
			},
			{
				Name:  "caddy",
				Usage: "print a Caddyfile site: static files, wharf's forward_auth for non-public artifacts",
				Description: `The same as wharf hosting nginx, for Caddy. With --server-name alone the
site gets Caddy's automatic HTTPS; --listen HOST:PORT serves plain HTTP.

Example:
   wharf hosting caddy --root /srv/wharf/public --upstream http://127.0.0.1:8080 \
       --server-name dl.example.com > /etc/caddy/wharf.caddy
   echo 'import /etc/caddy/wharf.caddy' >> /etc/caddy/Caddyfile && systemctl reload caddy`,
				Flags:  proxyFlags("`HOST:PORT` to serve plain HTTP on (default: --server-name with HTTPS, else :80)"),
				Action: func(c *cli.Context) error { return hostingProxy(c, hosting.Caddy) },
			},
			{
				Name:  "s3-policy",
				Usage: "print an S3 bucket policy: anonymous GetObject of the public part of the tree only, never a listing",
				Description: `Anyone may read the pointers, dl.pub, install, releases.json, index.html,
_redirects, every SHA256SUMS and signature, and the public artifacts;
basic and full artifacts stay private (serve them with wharf serve
--presign), and nobody may list the bucket.

Example:
   wharf hosting s3-policy --bucket releases --prefix dl --store s3://releases/dl > policy.json
   aws s3api put-bucket-policy --bucket releases --policy file://policy.json
   mc anonymous set-json policy.json local/releases`,
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "bucket", Required: true, Usage: "the bucket `B`", EnvVars: []string{"WHARF_HOSTING_BUCKET"}},
					&cli.StringFlag{Name: "prefix", Usage: "the tree's key prefix `P` in the bucket (as in s3://B/P)", EnvVars: []string{"WHARF_HOSTING_PREFIX"}},
					configFlag,
				}, historyFlags...),
				Action: hostingPolicy,
			},
		},
	}
}

// hostingProxy prints the nginx or Caddy configuration.
func hostingProxy(c *cli.Context, render func(w io.Writer, o hosting.Options) error) error {
	name := "hosting " + c.Command.Name
	if c.NArg() != 0 {
		return fmt.Errorf("%s: unexpected argument %q", name, c.Args().First())
	}
	cfg, err := publish.LoadConfig(c.String("config"))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	root := c.String("root")
	if !filepath.IsAbs(root) {
		return fmt.Errorf("%s: the root %q is not an absolute path (the proxy resolves it, not your shell)", name, root)
	}
	local := false
	if st, err := os.Stat(root); err == nil && st.IsDir() {
		local = true
	} else {
		fmt.Fprintf(c.App.ErrWriter, "wharf %s: warning: --root %s is no directory on this machine; the configuration names it as the proxy will see it (check the spelling)\n", name, root)
	}
	m, err := readHistory(c, root, local)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if local && c.Command.Name == "caddy" {
		// Caddy's file_server follows symbolic links, even out of the root.
		if err := noSymlinks(root); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	o := hosting.Options{
		Root:       root,
		Upstream:   c.String("upstream"),
		Listen:     c.String("listen"),
		ServerName: c.String("server-name"),
		Artifacts:  hosting.Artifacts(cfg, m),
	}
	if c.Bool("pin-latest") {
		if m == nil {
			return fmt.Errorf("%s: --pin-latest needs the tree's releases.json (not --config-only)", name)
		}
		o.Latest, o.Preview, err = pinnedReleases(c, root, local, m)
		if err != nil {
			return fmt.Errorf("%s: --pin-latest: %w", name, err)
		}
		fmt.Fprintf(c.App.ErrWriter, "wharf %s: latest %s and preview %s written in: run this again and reload the proxy after every publish\n",
			name, pinnedVersion(o.Latest), pinnedVersion(o.Preview))
	}
	if c.Command.Name == "nginx" {
		o.CacheDir = c.String("cache-dir")
		o.AccessLog = c.String("access-log")
		o.AuthCache = c.String("auth-cache")
		r, err := shell.ParseRate(c.String("rate-key"))
		if err != nil {
			return shell.Usagef("%s: --rate-key %q: %w", name, c.String("rate-key"), err)
		}
		o.KeyRate, o.KeyBurst = r.PerSecond, r.Burst
	}
	if err := render(c.App.Writer, o); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// pinnedReleases resolves latest and preview as wharf serve would now:
// each pointer's release in m, or the newest of its kind. The pointers
// are read from --store, or from root when it is on this machine.
func pinnedReleases(c *cli.Context, root string, local bool, m *publish.Manifest) (latest, preview *publish.Release, err error) {
	read := func(key string) (string, error) {
		b, err := os.ReadFile(filepath.Join(root, key))
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return strings.TrimSpace(string(b)), err
	}
	switch {
	case c.String("store") != "":
		st, closeStore, err := openStore(c.Context, c.String("store"), storeOptions{S3Endpoint: c.String("s3-endpoint"), DryRun: true})
		if err != nil {
			return nil, nil, err
		}
		defer closeStore()
		read = func(key string) (string, error) {
			obj, err := st.Open(c.Context, key)
			if errors.Is(err, publish.ErrNotFound) {
				return "", nil
			}
			if err != nil {
				return "", fmt.Errorf("store %s: %w", c.String("store"), err)
			}
			defer obj.Close()
			b, err := io.ReadAll(io.LimitReader(obj, 1<<10))
			return strings.TrimSpace(string(b)), err
		}
	case !local:
		return nil, nil, errors.New("the pointers latest and preview are read from --store, or from --root on this machine")
	}
	for _, p := range []struct {
		key string
		r   **publish.Release
	}{{publish.KeyLatest, &latest}, {publish.KeyPreview, &preview}} {
		v, err := read(p.key)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p.key, err)
		}
		*p.r, _ = m.Resolve(p.key, v)
	}
	return latest, preview, nil
}

// pinnedVersion names a pinned release in a message.
func pinnedVersion(r *publish.Release) string {
	if r == nil {
		return "(none published)"
	}
	return r.Version
}

// errNoHistory: no manifest to read the access classes of every release from.
var errNoHistory = errors.New("no releases.json to read every release's access classes from")

// readHistory reads the tree's manifest (releases.json) from --manifest,
// --store, or the directory root when it is on this machine (local). With
// none of them it refuses, unless --config-only, which it warns about.
func readHistory(c *cli.Context, root string, local bool) (*publish.Manifest, error) {
	switch {
	case c.String("manifest") != "":
		f, err := os.Open(c.String("manifest"))
		if err != nil {
			return nil, fmt.Errorf("manifest: %w", err)
		}
		defer f.Close()
		m, err := publish.ReadManifest(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name(), err)
		}
		return m, nil
	case c.String("store") != "":
		st, closeStore, err := openStore(c.Context, c.String("store"), storeOptions{S3Endpoint: c.String("s3-endpoint"), DryRun: true})
		if err != nil {
			return nil, err
		}
		defer closeStore()
		obj, err := st.Open(c.Context, publish.KeyManifest)
		if errors.Is(err, publish.ErrNotFound) {
			return nil, fmt.Errorf("%w: the store %s holds none (nothing published yet, or the wrong store?)", errNoHistory, c.String("store"))
		}
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", c.String("store"), err)
		}
		defer obj.Close()
		m, err := publish.ReadManifest(obj)
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", c.String("store"), err)
		}
		return m, nil
	case local:
		f, err := os.Open(filepath.Join(root, publish.KeyManifest))
		if err == nil {
			defer f.Close()
			m, err := publish.ReadManifest(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name(), err)
			}
			return m, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if !c.Bool("config-only") {
			return nil, fmt.Errorf("%w: %s has none (a mistyped --root, or nothing published yet?); give --manifest FILE or --store, or --config-only", errNoHistory, root)
		}
	case !c.Bool("config-only"):
		if c.Command.Name == "s3-policy" {
			return nil, fmt.Errorf("%w: give --store s3://BUCKET/PREFIX or --manifest FILE, or --config-only", errNoHistory)
		}
		return nil, fmt.Errorf("%w: give --manifest FILE, --store STORE (or a --root on this machine), or --config-only", errNoHistory)
	}
	fmt.Fprintf(c.App.ErrWriter, "wharf hosting %s: warning: --config-only: the access classes come from the config alone; "+
		"a name that an earlier release published as basic or full and the config now calls public is opened to everyone, its old builds too\n", c.Command.Name)
	return nil, nil
}

// noSymlinks refuses a tree that holds a symbolic link, naming every one
// (the first 20): Caddy's file_server follows them, out of the tree too,
// and has no setting to refuse them when it serves; wharf publish never
// writes one.
func noSymlinks(root string) error {
	// The root itself may be a link (/srv/public -> /data/public).
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	var links []string
	err = filepath.WalkDir(real, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			rel, _ := filepath.Rel(real, path)
			links = append(links, filepath.ToSlash(rel))
		}
		return nil
	})
	switch {
	case err != nil:
		return err
	case len(links) == 0:
		return nil
	}
	shown := links[:min(len(links), 20)]
	more := ""
	if len(links) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(links)-len(shown))
	}
	return fmt.Errorf("the tree %s holds %d symbolic links, which Caddy would follow (out of the tree too): %s%s; remove them (wharf publish never writes one)",
		root, len(links), strings.Join(shown, ", "), more)
}

// hostingPolicy prints the bucket policy.
func hostingPolicy(c *cli.Context) error {
	if c.NArg() != 0 {
		return fmt.Errorf("hosting s3-policy: unexpected argument %q", c.Args().First())
	}
	cfg, err := publish.LoadConfig(c.String("config"))
	if err != nil {
		return fmt.Errorf("hosting s3-policy: %w", err)
	}
	m, err := readHistory(c, "", false)
	if err != nil {
		return fmt.Errorf("hosting s3-policy: %w", err)
	}
	err = hosting.S3Policy(c.App.Writer, hosting.PolicyOptions{
		Bucket:    c.String("bucket"),
		Prefix:    c.String("prefix"),
		Artifacts: hosting.Artifacts(cfg, m),
	})
	if err != nil {
		return fmt.Errorf("hosting s3-policy: %w", err)
	}
	return nil
}
