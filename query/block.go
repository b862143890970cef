package query

import (
	"time"
)

// Block identifies a stored (or fetched) block.
type Block struct {
	Number     uint64
	Hash       string
	ParentHash string
	Time       time.Time
}
