package buildinfo_test

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wharfhq/wharf/internal/buildinfo"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/wharfhq/wharf", Version: "v0.3.1"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-23T20:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, tt := range []struct {
		name string
		bi   *debug.BuildInfo
		want buildinfo.Info
		str  string
	}{
		{"Recorded", bi,
			buildinfo.Info{Version: "v0.3.1", Commit: "0123456789abcdef0123456789abcdef01234567",
				Time: "2026-11-23T20:00:00Z", Modified: true, GoVersion: "go1.26.0"},
			"v0.3.1 (commit 0123456789ab modified, 2026-11-23T20:00:00Z, go1.26.0)"},
		{"NotRecorded", nil,
			buildinfo.Info{Version: "unknown", Commit: "unknown", Time: "unknown", GoVersion: "unknown"},
			"unknown (commit unknown, unknown, unknown)"},
		{"NoVCS", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}},
			buildinfo.Info{Version: "(devel)", Commit: "unknown", Time: "unknown", GoVersion: "go1.26.0"},
			"(devel) (commit unknown, unknown, go1.26.0)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := buildinfo.FromBuildInfo(tt.bi)
			if got != tt.want {
				t.Errorf("FromBuildInfo = %+v, want %+v", got, tt.want)
			}
			if s := got.String(); s != tt.str {
				t.Errorf("String() = %q, want %q", s, tt.str)
			}
		})
	}
}

func TestRead(t *testing.T) {
	// A test binary records the toolchain at least.
	if got := buildinfo.Read(); !strings.HasPrefix(got.GoVersion, "go") {
		t.Errorf("Read().GoVersion = %q, want go...", got.GoVersion)
	}
}

func TestCollector(t *testing.T) {
	i := buildinfo.Info{Version: "v0.3.1", Commit: "abc", Modified: true, GoVersion: "go1.26.0"}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(i.Collector("addrd"))
	want := `
# HELP addrd_build_info The running build: always 1, labelled with its version, commit and Go version.
# TYPE addrd_build_info gauge
addrd_build_info{commit="abc-modified",goversion="go1.26.0",version="v0.3.1"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "addrd_build_info"); err != nil {
		t.Error(err)
	}
}
