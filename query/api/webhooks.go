package api

// Webhook endpoints: /v1/webhooks (docs/events.md).

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/events"
	"github.com/wharfhq/wharf/query/webhook"
)

// oldSecretFor is how long a rotated-out secret still signs deliveries,
// beside the new one.
const oldSecretFor = 24 * time.Hour

// maxWebhookBody bounds a request body of /v1/webhooks.
const maxWebhookBody = 16 << 10

// webhookBody is an endpoint as the API writes it.
type webhookBody struct {
	ID             string   `json:"id"`
	URL            string   `json:"url"`
	Description    string   `json:"description"`
	Chain          string   `json:"chain"`
	Address        string   `json:"address"`
	Wallet         string   `json:"wallet"`
	Kinds          []string `json:"kinds"`
	State          string   `json:"state"`
	DisabledReason string   `json:"disabled_reason"`
	Cursor         string   `json:"cursor"`
	Failures       int      `json:"failures"`
	NextAttempt    string   `json:"next_attempt_time"`
	Secret         string   `json:"secret"`
	CreateTime     string   `json:"create_time"`
	UpdateTime     string   `json:"update_time"`
}

// webhookList is GET /v1/webhooks.
type webhookList struct {
	Webhooks []webhookBody `json:"webhooks"`
}

// webhookAttempt is a delivery attempt as the log lists it.
type webhookAttempt struct {
	EventID    string `json:"event_id"`
	EventType  string `json:"event_type"`
	Time       string `json:"time"`
	Status     int    `json:"status"`
	Error      string `json:"error"`
	LatencyMs  int64  `json:"latency_ms"`
	Response   string `json:"response_excerpt"`
	AttemptNum int64  `json:"attempt"`
}

// deliveryPage is GET /v1/webhooks/{id}/deliveries.
type deliveryPage struct {
	Deliveries    []webhookAttempt `json:"deliveries"`
	NextPageToken string           `json:"next_page_token"`
}

// webhookRequest is the body of a create or update; absent fields of an
// update are left as they are.
type webhookRequest struct {
	URL         *string   `json:"url"`
	Description *string   `json:"description"`
	Chain       *string   `json:"chain"`
	Address     *string   `json:"address"`
	Wallet      *string   `json:"wallet"`
	Kinds       *[]string `json:"kinds"`
	Enabled     *bool     `json:"enabled"`
	After       *string   `json:"after"`
}

func toWebhookBody(w query.Webhook, secret string) webhookBody {
	b := webhookBody{ID: w.ID, URL: w.URL, Description: w.Description, Chain: w.Filter.Chain, Address: w.Filter.Address,
		Kinds: w.Filter.Kinds, State: w.State, DisabledReason: w.DisabledReason, Cursor: events.Cursor(w.Account, w.Cursor),
		Failures: w.Failures, Secret: secret, CreateTime: timestamp(w.Created), UpdateTime: timestamp(w.Updated)}
	if b.Kinds == nil {
		b.Kinds = []string{}
	}
	if w.Filter.Wallet != "" {
		b.Wallet = query.Wallet{Chain: w.Filter.Chain, ID: w.Filter.Wallet}.Name()
	}
	if w.Failures > 0 && w.State == query.WebhookActive {
		b.NextAttempt = timestamp(w.NextAttempt)
	}
	return b
}

// hooks returns the webhook store, or the error of a server without one.
func (s *Server) hooks() (query.WebhookStore, error) {
	if s.webhooks == nil || s.deliver == nil {
		return nil, errorf(codeUnimplemented, "this server sends no webhooks")
	}
	return s.webhooks, nil
}

// readWebhookRequest reads and checks a create or update body.
// It reports whether the cursor and failures restart (enabled again,
// replayed).
func (s *Server) readWebhookRequest(r *http.Request, a query.Account, w *query.Webhook, create bool) (restart bool, err error) {
	if err := noParams(r); err != nil {
		return false, err
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody+1))
	if err != nil {
		return false, err
	}
	if len(body) > maxWebhookBody {
		return false, errorf(codeInvalidArgument, "request body longer than %d bytes", maxWebhookBody)
	}
	var req webhookRequest
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.More() {
		return false, errorf(codeInvalidArgument, "the body must be one JSON object with url, description, chain, address, wallet, kinds, enabled or after: %s", quote(errText(err)))
	}
	switch {
	case req.URL != nil:
		if err := s.deliver.Policy().CheckURL(*req.URL); err != nil {
			return false, errorf(codeInvalidArgument, "url %s: %s", quote(*req.URL), err.Error())
		}
		w.URL = *req.URL
	case create:
		return false, errorf(codeInvalidArgument, "url is required")
	}
	if req.Description != nil {
		if len(*req.Description) > 256 {
			return false, errorf(codeInvalidArgument, "description longer than 256 bytes")
		}
		w.Description = *req.Description
	}
	// A wallet filter, the request's or the endpoint's, sets the chain.
	wallet := walletFilter{chain: w.Filter.Chain, id: w.Filter.Wallet}
	if req.Wallet != nil {
		wallet = walletFilter{}
		if *req.Wallet != "" {
			if wallet, err = s.parseWalletName(*req.Wallet); err != nil {
				return false, err
			}
		}
	}
	chainParam := w.Filter.Chain
	if req.Chain != nil {
		if *req.Chain != "" && !slices.Contains(s.chains, *req.Chain) {
			return false, errorf(codeInvalidArgument, "unknown chain %s; this server serves %v", quote(*req.Chain), s.chains)
		}
		chainParam = *req.Chain
	} else if req.Wallet != nil {
		chainParam = "" // the endpoint's chain was its old wallet's, or is the new one's
	}
	if w.Filter.Chain, err = walletChain(chainParam, wallet); err != nil {
		return false, err
	}
	w.Filter.Wallet = wallet.id
	if req.Address != nil {
		w.Filter.Address = ""
		if *req.Address != "" {
			addr, err := s.parseAddress(w.Filter.Chain, *req.Address)
			if err != nil {
				return false, err
			}
			w.Filter.Address = addr
		}
	}
	if req.Kinds != nil {
		w.Filter.Kinds = nil
		for _, k := range *req.Kinds {
			if !slices.Contains(query.EventKinds, k) {
				return false, errorf(codeInvalidArgument, "unknown event kind %s; kinds are %s", quote(k), strings.Join(query.EventKinds, ", "))
			}
			if !slices.Contains(w.Filter.Kinds, k) {
				w.Filter.Kinds = append(w.Filter.Kinds, k)
			}
		}
	}
	if req.Enabled != nil {
		if !*req.Enabled {
			w.State, w.DisabledReason = query.WebhookDisabled, "disabled by the requester"
		} else if w.State != query.WebhookActive {
			w.State, w.DisabledReason = query.WebhookActive, ""
			w.Failures, w.FailingSince, w.NextAttempt = 0, time.Time{}, s.now()
			restart = true
		}
	}
	if req.After != nil {
		pos, err := events.ParseCursor(a.ID, *req.After)
		if err != nil {
			return false, badCursor(err)
		}
		w.Cursor, w.Failures, w.FailingSince, w.NextAttempt = pos, 0, time.Time{}, s.now()
		restart = true
	}
	return restart, nil
}

func errText(err error) string {
	if err == nil {
		return "trailing data"
	}
	return err.Error()
}

// createWebhook is POST /v1/webhooks: a new endpoint, delivering the
// events written from now on (or after the cursor "after"); the answer
// holds its signing secret, shown only then and when rotated.
func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, a query.Account) error {
	store, err := s.hooks()
	if err != nil {
		return err
	}
	last, err := s.feed.LastEventID(r.Context())
	if err != nil {
		return err
	}
	hook := query.Webhook{Account: a.ID, Cursor: last}
	if _, err := s.readWebhookRequest(r, a, &hook, true); err != nil {
		return err
	}
	if hook.Secret, err = webhook.NewSecret(rand.Reader); err != nil {
		return err
	}
	hook, err = store.CreateWebhook(r.Context(), hook)
	if errors.Is(err, query.ErrTooManyWebhooks) {
		return errorf(codeResourceExhausted, "the requester has as many webhook endpoints as it may have; delete some first")
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toWebhookBody(hook, hook.Secret))
	return nil
}

// listWebhooks is GET /v1/webhooks.
func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, a query.Account) error {
	store, err := s.hooks()
	if err != nil {
		return err
	}
	if err := noParams(r); err != nil {
		return err
	}
	hooks, err := store.Webhooks(r.Context(), a.ID)
	if err != nil {
		return err
	}
	out := webhookList{Webhooks: make([]webhookBody, len(hooks))}
	for i, h := range hooks {
		out.Webhooks[i] = toWebhookBody(h, "")
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// webhook reads the {id} of the path: the requester's endpoint.
func (s *Server) webhook(r *http.Request, a query.Account) (query.WebhookStore, query.Webhook, error) {
	store, err := s.hooks()
	if err != nil {
		return nil, query.Webhook{}, err
	}
	id := r.PathValue("id")
	if len(id) > 64 {
		return nil, query.Webhook{}, errorf(codeNotFound, "no webhook %s", quote(id))
	}
	hook, err := store.Webhook(r.Context(), a.ID, id)
	if errors.Is(err, query.ErrNotFound) {
		return nil, query.Webhook{}, errorf(codeNotFound, "no webhook %s", quote(id))
	}
	return store, hook, err
}

// getWebhook is GET /v1/webhooks/{id}.
func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request, a query.Account) error {
	_, hook, err := s.webhook(r, a)
	if err != nil {
		return err
	}
	if err := noParams(r); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toWebhookBody(hook, ""))
	return nil
}

// updateWebhook is PATCH /v1/webhooks/{id}: the fields given change;
// "enabled": true enables a disabled endpoint again, from its cursor;
// "after" replays from a cursor.
func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request, a query.Account) error {
	store, hook, err := s.webhook(r, a)
	if err != nil {
		return err
	}
	restart, err := s.readWebhookRequest(r, a, &hook, false)
	if err != nil {
		return err
	}
	return s.saveWebhook(w, r, store, hook, "", restart)
}

func (s *Server) saveWebhook(w http.ResponseWriter, r *http.Request, store query.WebhookStore, hook query.Webhook, secret string, restart bool) error {
	if err := store.UpdateWebhook(r.Context(), hook, restart); err != nil {
		return err
	}
	hook, err := store.Webhook(r.Context(), hook.Account, hook.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toWebhookBody(hook, secret))
	return nil
}

// deleteWebhook is DELETE /v1/webhooks/{id}.
func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, a query.Account) error {
	store, hook, err := s.webhook(r, a)
	if err != nil {
		return err
	}
	if err := noParams(r); err != nil {
		return err
	}
	if err := store.DeleteWebhook(r.Context(), a.ID, hook.ID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}

// rotateWebhookSecret is POST /v1/webhooks/{id}/rotate_secret: a new
// secret, answered once; the old one signs too for oldSecretFor.
func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request, a query.Account) error {
	store, hook, err := s.webhook(r, a)
	if err != nil {
		return err
	}
	if err := noParams(r); err != nil {
		return err
	}
	secret, err := webhook.NewSecret(rand.Reader)
	if err != nil {
		return err
	}
	hook.OldSecret, hook.OldUntil, hook.Secret = hook.Secret, s.now().Add(oldSecretFor), secret
	return s.saveWebhook(w, r, store, hook, secret, false)
}

// testWebhook is POST /v1/webhooks/{id}/test: a made-up event of type
// test sent at once; the answer is the attempt, also in the log.
func (s *Server) testWebhook(w http.ResponseWriter, r *http.Request, a query.Account) error {
	store, hook, err := s.webhook(r, a)
	if err != nil {
		return err
	}
	if err := noParams(r); err != nil {
		return err
	}
	var b [8]byte
	rand.Read(b[:])
	// The attempt waits on the endpoint, up to the delivery timeout:
	// without the store turn.
	var at query.WebhookAttempt
	if err := s.outsideTurn(r, func() error {
		at = s.deliver.Test(r.Context(), hook, "evt_test_"+hex.EncodeToString(b[:]))
		return nil
	}); err != nil {
		return err
	}
	if err := store.LogWebhookAttempt(r.Context(), at); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toAttempt(at))
	return nil
}

func toAttempt(at query.WebhookAttempt) webhookAttempt {
	return webhookAttempt{EventID: at.EventID, EventType: at.EventType, Time: at.Time.UTC().Format(time.RFC3339Nano),
		Status: at.Status, Error: at.Error, LatencyMs: at.Latency.Milliseconds(), Response: at.Response, AttemptNum: at.ID}
}

// webhookDeliveries is GET /v1/webhooks/{id}/deliveries: the delivery
// log, newest first, paged.
func (s *Server) webhookDeliveries(w http.ResponseWriter, r *http.Request, a query.Account) error {
	store, hook, err := s.webhook(r, a)
	if err != nil {
		return err
	}
	size, tok, err := pageParams(r, defaultListSize, maxListSize)
	if err != nil {
		return err
	}
	codec, err := s.tokens(r.Context())
	if err != nil {
		return err
	}
	sc := scope(a.ID, hook.ID)
	var before int64
	if tok != "" {
		cur, err := codec.decode(kindDeliveries, sc, tok)
		if err != nil {
			return badToken()
		}
		rd := reader{b: cur}
		before = int64(rd.uvarint())
		if err := rd.done(); err != nil {
			return badToken()
		}
	}
	as, err := store.WebhookAttempts(r.Context(), hook.ID, before, size+1)
	if err != nil {
		return err
	}
	out := deliveryPage{Deliveries: make([]webhookAttempt, 0, len(as))}
	if len(as) > size {
		as = as[:size]
		out.NextPageToken = codec.encode(kindDeliveries, sc, appendUvarint(nil, uint64(as[len(as)-1].ID)))
	}
	for _, at := range as {
		out.Deliveries = append(out.Deliveries, toAttempt(at))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
