package api

// The routes of the API: its endpoints and their handlers.

import (
	"net/http"

	"github.com/wharfhq/wharf/query"
)

// route is one endpoint: its ServeMux pattern and handler. The openapi
// test holds this table and openapi.yaml together.
type route struct {
	pattern string
	handle  func(s *Server, w http.ResponseWriter, r *http.Request, a query.Account) error
}

var routes = []route{
	{"PUT /v1/chains/{chain}/addresses/{address}", (*Server).subscribe},
	{"DELETE /v1/chains/{chain}/addresses/{address}", (*Server).unsubscribe},
	{"GET /v1/chains/{chain}/addresses/{address}", (*Server).getSubscription},
	{"GET /v1/addresses", (*Server).listAll},
	{"GET /v1/chains/{chain}/addresses", (*Server).listChain},
	{"GET /v1/chains/{chain}/addresses/{address}/balances", (*Server).balances},
	{"GET /v1/chains/{chain}/addresses/{address}/transactions", (*Server).transactions},
	{"GET /v1/chains/{chain}/transactions/{hash}", (*Server).transaction},
	{"GET /v1/chains/{chain}/addresses/{address}/balance_changes", (*Server).balanceChanges},
	{"PUT /v1/chains/{chain}/wallets/{wallet}", (*Server).putWallet},
	{"GET /v1/chains/{chain}/wallets/{wallet}", (*Server).getWallet},
	{"DELETE /v1/chains/{chain}/wallets/{wallet}", (*Server).deleteWallet},
	{"GET /v1/chains/{chain}/wallets/{wallet}/addresses", (*Server).walletAddresses},
	{"GET /v1/chains/{chain}/wallets/{wallet}/balances", (*Server).walletBalances},
	{"GET /v1/chains/{chain}/wallets/{wallet}/balance_changes", (*Server).walletBalanceChanges},
	{"GET /v1/chains/{chain}/wallets/{wallet}/balance_changes:export", (*Server).exportWalletChanges},
	{"GET /v1/chains/{chain}/wallets/{wallet}/transactions", (*Server).walletTransactions},
	{"GET /v1/events", (*Server).events},
	{"GET /v1/chains/{chain}/addresses/{address}/balance_changes:export", (*Server).exportChanges},
	{"POST /v1/webhooks", (*Server).createWebhook},
	{"GET /v1/webhooks", (*Server).listWebhooks},
	{"GET /v1/webhooks/{id}", (*Server).getWebhook},
	{"PATCH /v1/webhooks/{id}", (*Server).updateWebhook},
	{"DELETE /v1/webhooks/{id}", (*Server).deleteWebhook},
	{"POST /v1/webhooks/{id}/rotate_secret", (*Server).rotateWebhookSecret},
	{"POST /v1/webhooks/{id}/test", (*Server).testWebhook},
	{"GET /v1/webhooks/{id}/deliveries", (*Server).webhookDeliveries},
}

// Handle mounts h on the API's mux, for an endpoint beside /v1 that
// shares its logging, metrics and errors (a constant handler for the
// benchmark, say). With auth true, h runs behind the API-key check.
func (s *Server) Handle(pattern string, h http.Handler, auth bool) {
	if auth {
		inner := h
		h = s.authenticated(func(_ *Server, w http.ResponseWriter, r *http.Request, _ query.Account) error {
			inner.ServeHTTP(w, r)
			return nil
		})
	}
	s.mux.Handle(pattern, h)
}
