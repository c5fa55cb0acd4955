package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/console"
	"github.com/orbitrun/orbit/engine"
)

// consoleAddress is what orbit console prints with --json.
type consoleAddress struct {
	Engine string `json:"engine"`
	URL    string `json:"url"`
	// LoginURL is empty for a console that asks for its --http-token.
	LoginURL string `json:"login_url,omitempty"`
}

func (a *app) consoleCommand() *cobra.Command {
	var printOnly, open bool
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Print the login URL of the web console the engine serves",
		Long: `Print the address of the web console served by the engine of the project
(serve.http in .orbit/config.yaml, or orbit serve --http) and its login URL,
made of the token in .orbit/state/console.token: opened once in a browser,
it leaves a cookie that keeps the browser logged in. An engine a command
started on demand serves the console too, and prints nothing where you would
see it: this is where its login URL is. With no engine running and serve.http
set, one is started, as any command does.

--print prints the login URL alone, for scripts; --open also opens it with
xdg-open when there is one. A console started with --http-token asks for that
token instead, which nothing records: the command prints the console's address
and says so.

Exit status 3 when no engine serves a console.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			root, err := a.project()
			if err != nil {
				return err
			}
			if err := a.mayServeConsole(root); err != nil {
				return err
			}
			l, err := a.connect(ctx)
			if err != nil {
				return err
			}
			defer l.Close()
			var info engine.InfoReply
			if err := request(ctx, l, engine.EndpointInfo, nil, &info); err != nil {
				return err
			}
			addr, err := consoleOf(root, &info)
			if err != nil {
				return err
			}
			target := addr.LoginURL
			switch {
			case a.json:
				if err := a.printJSON(addr); err != nil {
					return err
				}
			case printOnly && target != "":
				a.printf("%s\n", target)
			case printOnly:
				a.printf("%s\n", addr.URL)
				a.errorf("the console asks for the --http-token engine %s was started with: open %s/?token=<that token>\n", addr.Engine, addr.URL)
			default:
				a.printf("console at %s\n", addr.URL)
				if target != "" {
					a.printf("console login (once per browser; the token is in %s): %s\n", consoleTokenFile(root), target)
				} else {
					a.printf("console login: %s/?token=<the --http-token engine %s was started with>\n", addr.URL, addr.Engine)
				}
			}
			if !open {
				return nil
			}
			return a.openURL(ctx, cmp.Or(target, addr.URL))
		},
	}
	cmd.Flags().BoolVar(&printOnly, "print", false, "print the login URL alone")
	cmd.Flags().BoolVar(&open, "open", false, "also open the login URL with xdg-open, when there is one")
	return cmd
}

// mayServeConsole refuses at once, without starting an engine, when no
// engine runs for root and none would serve a console: the config sets no
// serve.http and no NATS server is named whose engines might.
func (a *app) mayServeConsole(root string) error {
	if a.natsURL != "" {
		return nil
	}
	if _, err := engine.ReadInfo(root); err == nil {
		return nil
	}
	cfg, err := a.config(root)
	if err != nil {
		return err
	}
	if cfg.Serve.HTTP != "" || cfg.NATS.URL != "" {
		return nil
	}
	return noConsole(fmt.Sprintf("no engine serves %s, and .orbit/config.yaml sets no serve.http", root))
}

// consoleOf is the console the engine that answered info serves, with the
// login URL when the console asks for root's token file.
func consoleOf(root string, info *engine.InfoReply) (*consoleAddress, error) {
	c := info.Console
	if c == nil {
		msg := fmt.Sprintf("engine %s serves no console", info.Engine)
		if slices.Contains(info.RestartNeeded, "serve.http") {
			how := "'orbit engine restart' applies it"
			if !info.Background {
				how = "restart its orbit serve to apply it"
			}
			return nil, &exitError{code: exitUnavailable, err: fmt.Errorf("%s: serve.http changed in .orbit/config.yaml since it started; %s", msg, how)}
		}
		return nil, noConsole(msg)
	}
	addr := &consoleAddress{Engine: info.Engine, URL: c.URL}
	if !c.OwnerToken {
		return addr, nil
	}
	if info.Root != root {
		return nil, &exitError{code: exitUnavailable, err: fmt.Errorf("engine %s serves the console at %s for the root %s: its token is in that root's .orbit/state/console.token, on the machine it runs on", info.Engine, c.URL, info.Root)}
	}
	file := consoleTokenFile(root)
	if _, err := os.Lstat(file); errors.Is(err, os.ErrNotExist) {
		return nil, &exitError{code: exitUnavailable, err: fmt.Errorf("%s is gone, so the console of engine %s admits no one; restart the engine ('orbit engine restart', or its orbit serve) to make a new token", file, info.Engine)}
	}
	token, err := consoleToken(root)
	if err != nil {
		return nil, err
	}
	addr.LoginURL = console.LoginURL(c.URL, token)
	return addr, nil
}

// noConsole is the refusal of orbit console, saying how to get a console.
func noConsole(why string) error {
	return &exitError{code: exitUnavailable, err: fmt.Errorf("%s; set serve.http in .orbit/config.yaml (for example 127.0.0.1:4280; then 'orbit engine restart' if an engine runs), or run 'orbit serve --http 127.0.0.1:4280'", why)}
}

// openURL hands url to xdg-open, when there is one on PATH.
func (a *app) openURL(ctx context.Context, url string) error {
	opener, err := exec.LookPath("xdg-open")
	if err != nil {
		a.errorf("no xdg-open on PATH: open the URL above in a browser\n")
		return nil
	}
	cmd := exec.CommandContext(ctx, opener, url)
	cmd.Stdout, cmd.Stderr = a.stderr, a.stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("xdg-open: %w", err)
	}
	return nil
}
