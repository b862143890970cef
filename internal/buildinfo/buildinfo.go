// Package buildinfo tells which build is running: the version, the VCS
// commit and its time, as make build recorded them from git at link time
// or else as the Go toolchain recorded them in the binary, for
// `--version` and for a Prometheus build_info gauge.
package buildinfo

import (
	"runtime/debug"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// unknown stands for what the binary does not record (a test binary, a
// build outside a VCS checkout, or -buildvcs=false).
const unknown = "unknown"

// Info describes a build.
type Info struct {
	// Version is the main module's version: a tag such as v1.2.3, a
	// pseudo-version the go command derived from the commit, or (devel).
	Version string
	// Commit is the VCS revision the binary was built from.
	Commit string
	// Time is the commit's time (RFC 3339). Go records no build time,
	// so that a rebuild of the same commit gives the same bytes; the
	// commit's time stands for it.
	Time string
	// Modified reports a build from a work tree with uncommitted changes.
	Modified bool
	// GoVersion is the toolchain that built the binary, e.g. go1.26.0.
	GoVersion string
}

// What make build records at link time (-ldflags -X, see the Makefile),
// from git: the tag ("" when the commit has none), the commit, its time
// and "true" or "false" for a modified work tree. Each one given wins over
// what the Go toolchain recorded, which is nothing under -buildvcs=false
// or outside a checkout.
var (
	linkedVersion  string
	linkedCommit   string
	linkedTime     string
	linkedModified string
)

// Read returns the running binary's Info.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return withLinked(FromBuildInfo(bi), linkedVersion, linkedCommit, linkedTime, linkedModified)
}

// withLinked is i with the values recorded at link time that are set.
func withLinked(i Info, version, commit, time, modified string) Info {
	if version != "" {
		i.Version = version
	}
	if commit != "" {
		i.Commit = commit
		i.Time = unknown
		i.Modified = modified == "true"
	}
	if time != "" {
		i.Time = time
	}
	return i
}

// FromBuildInfo takes the Info out of what debug.ReadBuildInfo returned;
// nil gives every field as unknown.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	i := Info{Version: unknown, Commit: unknown, Time: unknown, GoVersion: unknown}
	if bi == nil {
		return i
	}
	if bi.Main.Version != "" {
		i.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		i.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Commit = s.Value
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

// String is the one line `--version` prints after the program's name:
// "v1.2.3 (commit 0123456789ab, 2026-11-23T20:00:00Z, go1.26.0)", with
// "modified" after the commit for a build from a changed work tree.
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	b.WriteString(" (commit ")
	b.WriteString(i.shortCommit())
	if i.Modified {
		b.WriteString(" modified")
	}
	b.WriteString(", ")
	b.WriteString(i.Time)
	b.WriteString(", ")
	b.WriteString(i.GoVersion)
	b.WriteString(")")
	return b.String()
}

// shortCommit is the commit cut to 12 hex digits, as git shows it.
func (i Info) shortCommit() string {
	if len(i.Commit) > 12 && i.Commit != unknown {
		return i.Commit[:12]
	}
	return i.Commit
}

// Collector is a gauge namespace_build_info, always 1, whose labels
// version, commit and goversion name the build (commit ends in "-modified"
// for a changed work tree), for joining with the program's other metrics.
func (i Info) Collector(namespace string) prometheus.Collector {
	commit := i.Commit
	if i.Modified {
		commit += "-modified"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "build_info",
		Help:      "The running build: always 1, labelled with its version, commit and Go version.",
		ConstLabels: prometheus.Labels{
			"version":   i.Version,
			"commit":    commit,
			"goversion": i.GoVersion,
		},
	})
	g.Set(1)
	return g
}
