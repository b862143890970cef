package events

import (
	"strconv"
	"time"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/rowjson"
)

// ID is an event's stable id, the webhook-id of its deliveries: the
// same for every requester and every delivery of it.
func ID(e query.Event) string { return "evt_" + strconv.FormatInt(e.ID, 10) }

// AppendJSON appends the JSON object of e as account's feed lists it:
// {"id","type","timestamp","cursor","data"}, the envelope Standard
// Webhooks recommends, with the cursor after e and e's stored data; and
// for an address one of account's descriptor wallets derived, "wallet":
// {"name", "internal"}: the wallet and whether the address is on a change
// branch.
func AppendJSON(b []byte, account int64, e query.Event) []byte {
	return appendJSON(b, ID(e), Cursor(account, e.ID), e)
}

// AppendTestJSON appends the JSON object of a made-up event of type
// test (a webhook's test): its id is id and its cursor empty, since it
// is not in the feed.
func AppendTestJSON(b []byte, id string, e query.Event) []byte {
	e.Kind = query.EventTest
	return appendJSON(b, id, "", e)
}

func appendJSON(b []byte, id, cursor string, e query.Event) []byte {
	b = append(b, `{"id":"`...)
	b = append(b, id...)
	b = append(b, `","type":"`...)
	b = append(b, e.Kind...) // one of query.EventKinds: no escaping
	b = append(b, `","timestamp":"`...)
	b = e.Created.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","cursor":"`...)
	b = append(b, cursor...)
	b = append(b, `","data":`...)
	b = append(b, e.Data...)
	if e.Wallet != "" {
		b = append(b, `,"wallet":{"name":`...)
		b = rowjson.AppendString(b, e.Wallet)
		b = append(b, `,"internal":`...)
		b = strconv.AppendBool(b, e.WalletInternal)
		b = append(b, '}')
	}
	return append(b, '}')
}
