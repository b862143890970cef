package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// NewCaddy starts Debian's caddy with site (a Caddyfile site block for
// addr) under global options that keep it off the network and out of the
// home directory: no admin endpoint, no automatic HTTPS, storage under a
// temporary directory.
func NewCaddy(tb testing.TB, addr, site string) *Proxy {
	tb.Helper()
	bin, err := exec.LookPath("caddy")
	Need(tb, "caddy", err)
	dir := tb.TempDir()
	p := &Proxy{Addr: addr, Dir: dir, log: filepath.Join(dir, "caddy.log")}
	conf := fmt.Sprintf(`{
	admin off
	auto_https off
	storage file_system %[1]s/data
}

%[2]s`, dir, site)
	file := filepath.Join(dir, "Caddyfile")
	writeConf(tb, file, conf)
	cmd := exec.Command(bin, "run", "--config", file, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	p.start(tb, cmd)
	return p
}
