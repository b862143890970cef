package publish

import (
	"bytes"
	"fmt"

	"github.com/wharfhq/wharf/templates"
)

func (r *publishRun) renderInstall(pubPEM []byte) ([]byte, error) {
	data := templates.InstallData{BaseURL: r.BaseURL, PublicKey: string(pubPEM)}
	for _, b := range r.Config.Binaries() {
		data.Binaries = append(data.Binaries, templates.InstallBinary{Name: b.Name, Executable: b.Executable, Access: b.Access})
	}
	var buf bytes.Buffer
	if err := r.install.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("render %s: %w", KeyInstall, err)
	}
	return buf.Bytes(), nil
}
