package api

import "reflect"

// Patterns lists the ServeMux patterns of the /v1 routes, for the
// openapi test.
func Patterns() []string {
	var out []string
	for _, r := range routes {
		out = append(out, r.pattern)
	}
	return out
}

// BodyTypes maps the openapi schema names to the Go types written as JSON.
var BodyTypes = map[string]reflect.Type{
	"Error":           reflect.TypeFor[errorBody](),
	"Subscription":    reflect.TypeFor[subscriptionName](),
	"AddressPage":     reflect.TypeFor[addressPage](),
	"Balances":        reflect.TypeFor[balancesBody](),
	"Balance":         reflect.TypeFor[balance](),
	"TransactionPage": reflect.TypeFor[transactionPage](),
	"Transaction":     reflect.TypeFor[transaction](),
	"Transfer":        reflect.TypeFor[transfer](),
}

// OpenAPIPattern is the route of the description itself.
const OpenAPIPattern = "GET /v1/openapi.yaml"
