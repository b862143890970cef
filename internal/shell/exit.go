package shell

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"
)

// Exit codes, as docs/design.md fixes them for both commands.
const (
	// ExitFailure is the command's own failure (wharf verify: an invalid
	// signature; addrd serve: the server stopped with an error).
	ExitFailure = 1
	// ExitUsage is a command line that cannot be run as given (unknown
	// command or flag, a malformed value), or an I/O error.
	ExitUsage = 2
)

// UsageError is a command line that cannot be run as given, or an I/O
// error: exit 2.
type UsageError struct{ Err error }

// Usagef returns a UsageError with a formatted message, as fmt.Errorf
// (%w wraps).
func Usagef(format string, args ...any) error {
	return UsageError{fmt.Errorf(format, args...)}
}

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// ExitCode implements cli.ExitCoder.
func (e UsageError) ExitCode() int { return ExitUsage }

// ExitCode is the exit code for err: 0 for nil, the code of a
// cli.ExitCoder in its chain (UsageError: 2), else ExitFailure.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) && ec.ExitCode() != 0 {
		return ec.ExitCode()
	}
	return ExitFailure
}
