package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/site/hosting"
)

func hostingCommand() *cli.Command {
	configFlag := &cli.StringFlag{Name: "config", Usage: "release contents `FILE` (wharf.toml), for the access classes; default: the built-in artifacts", EnvVars: []string{"WHARF_CONFIG"}}
	proxyFlags := func(listenUsage string) []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "root", Required: true, Usage: "the published `DIR` as the proxy sees it (absolute)", EnvVars: []string{"WHARF_HOSTING_ROOT"}},
			&cli.StringFlag{Name: "upstream", Required: true, Usage: "wharf serve's `URL` as the proxy reaches it", EnvVars: []string{"WHARF_HOSTING_UPSTREAM"}},
			&cli.StringFlag{Name: "listen", Usage: listenUsage, EnvVars: []string{"WHARF_HOSTING_LISTEN"}},
			&cli.StringFlag{Name: "server-name", Usage: "host `NAME` the site answers for", EnvVars: []string{"WHARF_HOSTING_SERVER_NAME"}},
			configFlag,
		}
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
					&cli.StringFlag{Name: "access-log", Value: "/var/log/nginx/access.log", Usage: "nginx's access log `FILE` (written without the basic-auth user, which holds API keys)", EnvVars: []string{"WHARF_HOSTING_ACCESS_LOG"}}),
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
   wharf hosting s3-policy --bucket releases --prefix dl > policy.json
   aws s3api put-bucket-policy --bucket releases --policy file://policy.json
   mc anonymous set-json policy.json local/releases`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "bucket", Required: true, Usage: "the bucket `B`", EnvVars: []string{"WHARF_HOSTING_BUCKET"}},
					&cli.StringFlag{Name: "prefix", Usage: "the tree's key prefix `P` in the bucket (as in s3://B/P)", EnvVars: []string{"WHARF_HOSTING_PREFIX"}},
					configFlag,
				},
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
	m, err := readManifest(root)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	o := hosting.Options{
		Root:       root,
		Upstream:   c.String("upstream"),
		Listen:     c.String("listen"),
		ServerName: c.String("server-name"),
		Artifacts:  hosting.Artifacts(cfg, m),
	}
	if c.Command.Name == "nginx" {
		o.CacheDir = c.String("cache-dir")
		o.AccessLog = c.String("access-log")
	}
	if err := render(c.App.Writer, o); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// readManifest reads releases.json of a published directory when this
// machine has it (the proxy's machine may be another); nil when absent.
func readManifest(root string) (*publish.Manifest, error) {
	f, err := os.Open(filepath.Join(root, publish.KeyManifest))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := publish.ReadManifest(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return m, nil
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
	err = hosting.S3Policy(c.App.Writer, hosting.PolicyOptions{
		Bucket:    c.String("bucket"),
		Prefix:    c.String("prefix"),
		Artifacts: cfg.Artifacts,
	})
	if err != nil {
		return fmt.Errorf("hosting s3-policy: %w", err)
	}
	return nil
}
