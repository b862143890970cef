package publish

import (
	"bytes"
	"context"
	"fmt"

	"github.com/wharfhq/wharf/templates"
)

// writeInstall renders the install script and writes it when it changed.
func (r *publishRun) writeInstall(ctx context.Context, pubPEM []byte) error {
	script, err := r.renderInstall(pubPEM, r.res.Channel.Sequence)
	if err != nil {
		return err
	}
	return r.putIfChanged(ctx, KeyInstall, script, "text/x-shellscript; charset=utf-8", false)
}

// renderInstall renders the install script, which refuses a channel
// record older than minSequence.
func (r *publishRun) renderInstall(pubPEM []byte, minSequence uint64) ([]byte, error) {
	data := templates.InstallData{BaseURL: r.BaseURL, PublicKey: string(pubPEM), MinSequence: minSequence}
	for _, b := range r.Config.Binaries() {
		data.Binaries = append(data.Binaries, templates.InstallBinary{Name: b.Name, Executable: b.Executable, Access: b.Access})
	}
	var buf bytes.Buffer
	if err := r.install.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("render %s: %w", KeyInstall, err)
	}
	return buf.Bytes(), nil
}
