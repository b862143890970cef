// Package query is the address-data service's domain: subscriptions,
// balances and transactions, and the seams between the /v1 API, the
// storage (query/store), the chain (query/evm) and the fetcher
// (query/fetch). It holds types and interfaces only: no worker runs here.
//
// It imports neither net/http nor a database driver.
package query
