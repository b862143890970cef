package main

import (
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/query"
)

func chainCommand() *cli.Command {
	chainFlag := func() cli.Flag {
		return &cli.StringFlag{Name: "chain", Required: true, EnvVars: []string{"ADDRD_CHAIN_NAME"},
			Usage: "the chain `NAME`, as in serve's --chain NAME=RPC_URL"}
	}
	return &cli.Command{
		Name:  "chain",
		Usage: "show a chain's fetching, and resume or rewind a chain whose fetching stopped",
		Description: `The fetcher stops a chain rather than delete its history when the node
serves a reorg deeper than --max-reorg-depth, or below a block the node
said is finalized: nothing is deleted, /healthz says why, and the chain
waits for an operator. These commands give the order through the
database; the replica that fetches the chain carries it out within a few
seconds.

Example:
   addrd chain status
   addrd chain resume --chain ETH           # apply the reorg that was refused
   addrd chain rewind --chain ETH --to 19000000   # fetch again from block 19000001`,
		Subcommands: []*cli.Command{
			{
				Name:        "status",
				Usage:       "list the chains: recorded identity, stored head, leader and whether fetching stopped",
				UsageText:   "addrd chain status [--db DB]",
				Description: "Example:\n   addrd chain status --db postgres://addrd@db/addrd",
				Flags:       []cli.Flag{dbFlag()},
				Action:      chainStatus,
			},
			{
				Name:      "resume",
				Usage:     "resume a stopped chain, applying the reorg it stopped at whatever its depth",
				UsageText: "addrd chain resume --chain NAME [--db DB]",
				Description: `Use it when the node is right: a deep reorg did happen. The blocks above
the fork are deleted, their statement rows retracted in the events feed.

Example:
   addrd chain resume --chain ETH`,
				Flags:  []cli.Flag{chainFlag(), dbFlag()},
				Action: chainResume,
			},
			{
				Name:      "rewind",
				Usage:     "resume a chain from block N: every stored block above it is deleted and fetched again",
				UsageText: "addrd chain rewind --chain NAME --to N [--db DB]",
				Description: `Example:
   addrd chain rewind --chain ETH --to 19000000`,
				Flags: []cli.Flag{chainFlag(), dbFlag(),
					&cli.Uint64Flag{Name: "to", Required: true, Usage: "the block `N` kept: fetching goes on from N+1"}},
				Action: chainRewind,
			},
		},
	}
}

func chainStatus(c *cli.Context) error {
	if c.NArg() > 0 {
		return shell.Usagef("chain status: unexpected argument %q", c.Args().First())
	}
	db, err := openDB(c)
	if err != nil {
		return fmt.Errorf("chain status: %w", err)
	}
	defer db.Close()
	chains, err := db.RecordedChains(c.Context)
	if err != nil {
		return fmt.Errorf("chain status: %w", err)
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CHAIN\tCHAIN ID\tSTORED HEAD\tLEADER\tFETCHING")
	for _, name := range chains {
		id, err := db.ChainIdentity(c.Context, name)
		if err != nil {
			return fmt.Errorf("chain status: %w", err)
		}
		head := "-"
		if cp, ok, err := db.Checkpoint(c.Context, name); err != nil {
			return fmt.Errorf("chain status: %w", err)
		} else if ok {
			head = strconv.FormatUint(cp.Number, 10)
		}
		leader := "-"
		switch l, err := db.ChainLease(c.Context, name); {
		case errors.Is(err, query.ErrNotFound):
		case err != nil:
			return fmt.Errorf("chain status: %w", err)
		case l.Left > 0:
			leader = l.Holder
		}
		s, err := db.ChainStop(c.Context, name)
		if err != nil {
			return fmt.Errorf("chain status: %w", err)
		}
		state := "on"
		switch {
		case s.Stopped():
			state = "stopped since " + s.Since.Format(time.RFC3339) + ": " + s.Reason
		case s.RewindTo >= 0:
			state = fmt.Sprintf("rewinding to %d", s.RewindTo)
		case s.Accept:
			state = "resumed: the next reorg is applied"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", name, id.ID, head, leader, state)
	}
	return w.Flush()
}

func chainResume(c *cli.Context) error {
	if c.NArg() > 0 {
		return shell.Usagef("chain resume: unexpected argument %q", c.Args().First())
	}
	db, err := openDB(c)
	if err != nil {
		return fmt.Errorf("chain resume: %w", err)
	}
	defer db.Close()
	name := c.String("chain")
	if err := db.ResumeChain(c.Context, name); err != nil {
		return fmt.Errorf("chain resume: %w", err)
	}
	fmt.Fprintf(c.App.Writer, "chain %s resumed: the reorg it stopped at is applied at the fetcher's next step\n", name)
	return nil
}

func chainRewind(c *cli.Context) error {
	if c.NArg() > 0 {
		return shell.Usagef("chain rewind: unexpected argument %q", c.Args().First())
	}
	db, err := openDB(c)
	if err != nil {
		return fmt.Errorf("chain rewind: %w", err)
	}
	defer db.Close()
	name, to := c.String("chain"), c.Uint64("to")
	cp, ok, err := db.Checkpoint(c.Context, name)
	if err != nil {
		return fmt.Errorf("chain rewind: %w", err)
	}
	if !ok {
		return fmt.Errorf("chain rewind: chain %s has no stored block", name)
	}
	if to >= cp.Number {
		return shell.Usagef("chain rewind: --to %d: the stored head of %s is %d: give a block below it", to, name, cp.Number)
	}
	if err := db.RewindChain(c.Context, name, to); err != nil {
		return fmt.Errorf("chain rewind: %w", err)
	}
	fmt.Fprintf(c.App.Writer, "chain %s: the fetcher deletes the blocks above %d (stored head %d) at its next step and fetches them again\n", name, to, cp.Number)
	return nil
}
