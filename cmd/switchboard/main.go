// Command switchboard runs every part of Switchboard; see `switchboard --help`.
package main

import (
	"os"

	"github.com/switchboard-io/switchboard/internal/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:], os.Stdout, os.Stderr))
}
