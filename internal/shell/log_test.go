package shell_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/shell"
)

func TestNewLogger(t *testing.T) {
	t.Run("JSON", func(t *testing.T) {
		var b bytes.Buffer
		log, closeLog, err := shell.NewLogger(&b, "warn", "json")
		if err != nil {
			t.Fatal(err)
		}
		log.Info("dropped")
		log.Warn("kept", "err", errors.New("boom"))
		if err := closeLog(); err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		if err := json.Unmarshal(b.Bytes(), &rec); err != nil {
			t.Fatalf("%q: %v", b.String(), err)
		}
		if rec["msg"] != "kept" || rec["err"] != "boom" {
			t.Errorf("logged %q, want only the warning with err=boom", b.String())
		}
	})
	t.Run("Text", func(t *testing.T) {
		var b bytes.Buffer
		log, closeLog, err := shell.NewLogger(&b, "debug", "text")
		if err != nil {
			t.Fatal(err)
		}
		log.Debug("hello")
		closeLog()
		if !strings.Contains(b.String(), "level=DEBUG msg=hello") {
			t.Errorf("logged %q", b.String())
		}
	})
	for _, tt := range []struct{ level, format, want string }{
		{"loud", "text", `--log-level "loud": want debug, info, warn or error`},
		{"info", "xml", `--log-format "xml": want text or json`},
	} {
		t.Run("Err"+tt.level+tt.format, func(t *testing.T) {
			_, _, err := shell.NewLogger(&bytes.Buffer{}, tt.level, tt.format)
			if err == nil || err.Error() != tt.want || shell.ExitCode(err) != shell.ExitUsage {
				t.Errorf("NewLogger(%q, %q) = %v, want the usage error %q", tt.level, tt.format, err, tt.want)
			}
		})
	}
}
