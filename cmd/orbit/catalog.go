package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/executor"
)

// assetKind is one kind of asset the catalogs hold (jobs, activities,
// executors), as its list and show commands see it.
type assetKind struct {
	noun, plural string
	entries      func(*assets.Catalog) []assets.Entry
	// find returns the loaded asset of that name, which --json prints.
	find func(c *assets.Catalog, name string) (any, error)
}

var (
	jobAssets = assetKind{noun: "job", plural: "jobs",
		entries: (*assets.Catalog).Jobs,
		find:    func(c *assets.Catalog, name string) (any, error) { return c.Job(name) }}
	activityAssets = assetKind{noun: "activity", plural: "activities",
		entries: (*assets.Catalog).Activities,
		find:    func(c *assets.Catalog, name string) (any, error) { return c.Activity(name) }}
	executorAssets = assetKind{noun: "executor", plural: "executors",
		entries: (*assets.Catalog).Executors,
		find:    func(c *assets.Catalog, name string) (any, error) { return c.Executor(name) }}
)

// catalogCommands returns the list and show commands of kind k: one
// builder, so that `orbit job`, `orbit activity` and `orbit executor`
// list and show their assets the same way.
func (a *app) catalogCommands(k assetKind) []*cobra.Command {
	list := &cobra.Command{
		Use:   "list",
		Short: fmt.Sprintf("List the %s of the catalogs, with the layer each comes from", k.plural),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.listAssets(cmd.Context(), k)
		},
	}
	show := &cobra.Command{
		Use:   "show <name>",
		Short: fmt.Sprintf("Print the file of a %s as written, comments included", k.noun),
		Long: fmt.Sprintf(`Print the YAML file the %[1]s NAME was loaded from, as written, comments
included, on stdout; where it came from (its layer and file) goes to stderr.
A seeded %[1]s is built into the binary: to change one, copy it into
.orbit/%[2]s/ under another name, for example

  orbit %[1]s show NAME > .orbit/%[2]s/my_%[1]s.yaml

and change metadata.name. With --json the loaded %[1]s is printed instead,
as Orbit understood it (defaults filled in, references resolved).

Exit status: 0, or 2 when no %[1]s has that name (the message lists those
that exist) or its file could not be loaded (the message says why).`, k.noun, k.plural),
		Args: exactArgs(1, "a name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.showAsset(cmd.Context(), k, args[0])
		},
	}
	return []*cobra.Command{list, show}
}

func (a *app) executorCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "executor", Short: "List and show the CLI agents agent_loop activities run on (backend: cli)"}
	cmd.AddCommand(a.catalogCommands(executorAssets)...)
	return cmd
}

func (a *app) listAssets(ctx context.Context, k assetKind) error {
	cat, err := a.rootCatalog()
	if err != nil {
		return err
	}
	list := k.entries(cat)
	var paused map[string]executor.JobPause
	if k.noun == "job" {
		paused = a.pausedJobs(ctx)
	}
	for _, p := range cat.Problems() {
		a.errorf("orbit: warning: left out of the catalog: %s\n", p)
	}
	if a.json {
		return a.printJSON(list)
	}
	t := newTable(a.stdout, "NAME", "KIND", "LAYER", "SOURCE", "DESCRIPTION")
	for _, e := range list {
		source := e.Source
		if len(e.Shadows) > 0 {
			source += " (shadows " + strings.Join(e.Shadows, ", ") + ")"
		}
		desc := firstLine(e.Description)
		if _, ok := paused[e.Name]; ok {
			desc = "[paused] " + desc
		}
		t.row(e.Name, e.Kind, string(e.Layer), source, desc)
	}
	return t.flush()
}

// showAsset prints the file the asset name of kind k was loaded from, or
// with --json the loaded asset.
func (a *app) showAsset(ctx context.Context, k assetKind, name string) error {
	cat, err := a.rootCatalog()
	if err != nil {
		return err
	}
	asset, err := k.find(cat, name)
	if errors.Is(err, assets.ErrNotFound) {
		var names []string
		for _, e := range k.entries(cat) {
			names = append(names, e.Name)
		}
		return usageErr("no %s named %q; the %s are: %s (orbit %s list)", k.noun, name, k.plural, strings.Join(names, ", "), k.noun)
	}
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(asset)
	}
	var entry assets.Entry
	for _, e := range k.entries(cat) {
		if e.Name == name {
			entry = e
		}
	}
	data, err := assets.ReadSource(entry.Source)
	if err != nil {
		return err
	}
	from := fmt.Sprintf("orbit: %s %s: %s (layer %s)", k.noun, name, entry.Source, entry.Layer)
	if len(entry.Shadows) > 0 {
		from += ", shadowing " + strings.Join(entry.Shadows, ", ")
	}
	if k.noun == "job" {
		if p, ok := a.pausedJobs(ctx)[name]; ok {
			from += fmt.Sprintf("; paused since %s (orbit job unpause %s)", timestamp(&p.At), name)
		}
	}
	a.errorf("%s\n", from)
	_, err = a.stdout.Write(data)
	return err
}
