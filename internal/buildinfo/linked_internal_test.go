package buildinfo

import "testing"

func TestWithLinked(t *testing.T) {
	recorded := Info{Version: "(devel)", Commit: "aaaa", Time: "2026-01-01T00:00:00Z", Modified: true, GoVersion: "go1.26.0"}
	for _, tt := range []struct {
		name                            string
		version, commit, time, modified string
		want                            Info
	}{
		{"Nothing", "", "", "", "", recorded},
		{"Commit", "", "bbbb", "2026-11-26T10:00:00Z", "false",
			Info{Version: "(devel)", Commit: "bbbb", Time: "2026-11-26T10:00:00Z", GoVersion: "go1.26.0"}},
		{"TagModified", "v1.2.3", "bbbb", "2026-11-26T10:00:00Z", "true",
			Info{Version: "v1.2.3", Commit: "bbbb", Time: "2026-11-26T10:00:00Z", Modified: true, GoVersion: "go1.26.0"}},
		// A commit without its time never shows the time of another.
		{"CommitNoTime", "", "bbbb", "", "false",
			Info{Version: "(devel)", Commit: "bbbb", Time: "unknown", GoVersion: "go1.26.0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := withLinked(recorded, tt.version, tt.commit, tt.time, tt.modified); got != tt.want {
				t.Errorf("withLinked = %+v, want %+v", got, tt.want)
			}
		})
	}
}
