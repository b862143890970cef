package shell

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
)

// Listen listens on the address of the flag name of c (such as --listen).
// When the address is taken or not allowed, the error says how to choose
// another: the flag and its environment variable.
func Listen(c *cli.Context, name string) (net.Listener, error) {
	addr := c.String(name)
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	how := "--" + name + " ADDR"
	for _, f := range c.Command.Flags {
		if ev, ok := f.(interface{ GetEnvVars() []string }); ok && hasName(f, name) && len(ev.GetEnvVars()) > 0 {
			how += " or $" + strings.Join(ev.GetEnvVars(), ", $")
		}
	}
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("%w: another server listens on %s; stop it, or choose a free address with %s", err, addr, how)
	case errors.Is(err, syscall.EACCES):
		return nil, fmt.Errorf("%w: ports below 1024 need privileges; choose another address with %s", err, how)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return nil, fmt.Errorf("%w: %s is not an address of this machine; choose another with %s", err, addr, how)
	}
	return nil, fmt.Errorf("--%s %s: %w", name, addr, err)
}

func hasName(f cli.Flag, name string) bool {
	for _, n := range f.Names() {
		if n == name {
			return true
		}
	}
	return false
}
