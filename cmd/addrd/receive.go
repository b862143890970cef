package main

// addrd receive: a webhook receiver for development and the receiver
// example of docs/events.md.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
)

func receiveCommand() *cli.Command {
	return &cli.Command{
		Name:  "receive",
		Usage: "receive webhooks for development: print each delivery, its Standard Webhooks signature checked",
		Description: `Listens on --listen and answers each POST whose signature the secret
verifies (the reference Go library, as any receiver would) with 204,
printing one line: the event's id, type, chain, address, block and
cursor. A delivery that does not verify is answered 401 and printed as
refused. Create the endpoint first (POST /v1/webhooks); its secret is in
the answer.

Example:
   addrd receive --listen 127.0.0.1:9000 --secret whsec_...`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:9000", EnvVars: []string{"ADDRD_RECEIVE_LISTEN"},
				Usage: "receive on `ADDR`"},
			&cli.StringFlag{Name: "secret", EnvVars: []string{"ADDRD_WEBHOOK_SECRET"},
				Usage: "the endpoint's signing secret, `whsec_...`"},
		},
		Action: receive,
	}
}

func receive(c *cli.Context) error {
	if c.NArg() > 0 {
		return shell.Usagef("receive: unexpected argument %q", c.Args().First())
	}
	wh, err := standardwebhooks.NewWebhook(c.String("secret"))
	if err != nil || c.String("secret") == "" {
		return shell.Usagef("receive: --secret: want the endpoint's whsec_... secret, as POST /v1/webhooks answered it")
	}
	ln, err := shell.Listen(c, "listen")
	if err != nil {
		return fmt.Errorf("receive: %w", err)
	}
	ctx, stop := shell.SignalContext(c.Context)
	defer stop()
	fmt.Fprintf(c.App.Writer, "addrd receive listening on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: receiver(wh, c.App.Writer), ReadHeaderTimeout: 10 * time.Second}
	return shell.Serve(ctx, srv, ln, 5*time.Second)
}

// receiver verifies and prints deliveries.
func receiver(wh *standardwebhooks.Webhook, out io.Writer) http.Handler {
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil || r.Method != http.MethodPost {
			http.Error(w, "want a POST", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if err := wh.Verify(body, r.Header); err != nil {
			fmt.Fprintf(out, "refused %s: %v\n", r.Header.Get("webhook-id"), err)
			http.Error(w, "signature does not verify", http.StatusUnauthorized)
			return
		}
		var e struct {
			ID, Type, Cursor string
			Data             struct {
				Chain, Address, State string
				Block                 *uint64 `json:"block_number"`
				Amount                string
				Contract              string
				TokenID               string `json:"token_id"`
			}
		}
		json.Unmarshal(body, &e)
		line := fmt.Sprintf("%s %s %s %s", e.ID, e.Type, e.Data.Chain, e.Data.Address)
		if e.Data.Block != nil {
			line += fmt.Sprintf(" block %d %s amount %s", *e.Data.Block, asset(e.Data.Contract, e.Data.TokenID), e.Data.Amount)
		}
		if e.Data.State != "" {
			line += " " + e.Data.State
		}
		fmt.Fprintf(out, "%s cursor %s\n", line, e.Cursor)
		w.WriteHeader(http.StatusNoContent)
	})
}

// asset names what a balance change moved: the chain's own coin
// ("native") or a token contract, with its token id for ERC-1155.
func asset(contract, tokenID string) string {
	switch {
	case contract == "":
		return "native"
	case tokenID != "":
		return "token " + contract + " id " + tokenID
	}
	return "token " + contract
}
