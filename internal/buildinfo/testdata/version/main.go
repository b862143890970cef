// Command version prints buildinfo.Read(), for TestMakeBuildRecords.
package main

import (
	"fmt"

	"github.com/wharfhq/wharf/internal/buildinfo"
)

func main() { fmt.Println(buildinfo.Read()) }
