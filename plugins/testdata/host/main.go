// Command host is a minimal broker for the tests of package plugins: it
// loads one authorizer link, asks the plugin for its pid (the testauthz
// "proc" ask), prints the answer on stdout and waits to be killed.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/seed6639df8c/courier/plugins"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: host PLUGIN SHA256")
		os.Exit(2)
	}
	ctx := context.Background()
	c, errs := plugins.Load(ctx, []rules.AuthorizerLink{{
		Name: "t", Path: os.Args[1], SHA256: os.Args[2], Timeout: 5 * time.Second,
		OnFailure: rules.LinkFailDeny, Mode: rules.LinkEnforce,
	}}, nil, plugins.Options{})
	if len(errs) > 0 {
		fmt.Fprintln(os.Stderr, errs)
		os.Exit(1)
	}
	d, _ := c.Resolve(ctx, wire.Request{ID: "pid", Surface: "bash", Value: "proc"})
	fmt.Println(d.DenialReason)
	select {}
}
