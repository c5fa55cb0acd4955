package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/orbitrun/orbit/assets"
	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/gitops"
	"github.com/orbitrun/orbit/internal/sandbox"
)

// restartFix is how an engine is given this shell's environment and the
// configuration as the file has it now.
const restartFix = "orbit engine restart (from this shell: the new engine takes its environment); an engine run by orbit serve is restarted where it runs"

func fail(check, detail, fix string) Finding {
	return Finding{Check: check, Level: Fail, Detail: detail, Fix: fix}
}

func warn(check, detail, fix string) Finding {
	return Finding{Check: check, Level: Warn, Detail: detail, Fix: fix}
}

func ok(check, detail string) Finding { return Finding{Check: check, Level: OK, Detail: detail} }

func skip(check, detail string) Finding { return Finding{Check: check, Level: Skip, Detail: detail} }

// engineFindings: the engine answers, runs with this shell's provider
// settings, and has loaded the configuration file as it is now.
func engineFindings(f *Facts) []Finding {
	var out []Finding
	if f.ConfigErr != nil && f.Status == nil {
		out = append(out, fail("config", f.ConfigErr.Error(), "correct the file as the message says"))
	}
	st := f.Status
	switch {
	case f.ConnectErr != nil:
		return append(out, fail("engine", "no engine serves "+f.Root+": "+f.ConnectErr.Error(),
			"read .orbit/state/engine.log for why it did not start, or run orbit serve in the foreground to see it"))
	case errors.Is(f.StatusErr, events.ErrNotPermitted):
		return append(out, skip("engine", "this key may not ask the engine how it is (a reader's key reads the log alone): "+
			"the engine's checks need the client's key (drop --nkey, or ORBIT_NKEY)"))
	case st == nil:
		return append(out, fail("engine", "the engine does not answer engine.status: "+errText(f.StatusErr),
			"orbit engine stop, then any command starts a new one (or orbit engine restart)"))
	}
	kind := "orbit serve"
	if st.Background {
		kind = "a background engine"
	}
	out = append(out, ok("engine", fmt.Sprintf("engine %s (pid %d, %s, version %s) at %s, up %s",
		st.Engine, st.PID, kind, st.Version, st.URL, (time.Duration(st.UptimeSeconds)*time.Second).String())))

	if diffs := engine.DiffSettings(st.Settings, f.Lookup); len(diffs) > 0 {
		var says []string
		for _, d := range diffs {
			says = append(says, d.String())
		}
		out = append(out, fail("environment", "the engine was started from another environment than this shell's: "+strings.Join(says, "; "), restartFix))
	} else {
		out = append(out, ok("environment", "the engine's provider settings are this shell's"))
	}

	c := st.Config
	switch {
	case c.Error != nil:
		out = append(out, fail("config", fmt.Sprintf("%s does not load (%s): the engine keeps the configuration it loaded before (%s)", c.File, c.Error.Problem.String(), c.Hash),
			"correct "+c.File+"; the engine loads it when it changes"))
	case len(c.RestartNeeded) > 0:
		out = append(out, fail("config", fmt.Sprintf("%s changes %s, which the engine applies only when it starts: it runs with the values it started with",
			c.File, strings.Join(c.RestartNeeded, ", ")), restartFix))
	default:
		file := c.File
		if c.Missing {
			file += " (none: every default)"
		}
		out = append(out, ok("config", fmt.Sprintf("%s loaded %s (%s) and current", file, c.Loaded.Format(time.RFC3339), c.Hash)))
	}
	return out
}

// credentialFindings: every identity's seed is there, readable, and no
// one but its owner may read it; the directory likewise.
func credentialFindings(root string) []Finding {
	dir := filepath.Join(root, ".orbit", "state", "creds")
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []Finding{ok("credentials", dir+" is made when the engine first starts")}
	}
	if err != nil {
		return []Finding{fail("credentials", err.Error(), "make "+dir+" readable by the user the engine runs as")}
	}
	var wrong []string
	if fi.Mode().Perm()&0o077 != 0 {
		wrong = append(wrong, fmt.Sprintf("%s has mode %04o", dir, fi.Mode().Perm()))
	}
	denied := false
	for _, id := range events.Identities {
		path := events.CredsFile(dir, id)
		fi, err := os.Stat(path)
		if err != nil {
			denied = denied || errors.Is(err, fs.ErrPermission)
			wrong = append(wrong, fmt.Sprintf("%s: %v", path, err))
			continue
		}
		if fi.Mode().Perm()&0o077 != 0 {
			wrong = append(wrong, fmt.Sprintf("%s has mode %04o", path, fi.Mode().Perm()))
		}
		if data, err := os.ReadFile(path); err != nil {
			denied = denied || errors.Is(err, fs.ErrPermission)
			wrong = append(wrong, fmt.Sprintf("%s is not readable: %v", path, err))
		} else if len(strings.TrimSpace(string(data))) == 0 {
			wrong = append(wrong, path+" is empty")
		}
	}
	if denied {
		return []Finding{fail("credentials", strings.Join(wrong, "; "), fmt.Sprintf(
			"run orbit as the user who owns %s%s (the keys are made by the user an engine first ran as: an engine started with sudo makes root's), or give that user's keys to this one: chown -R \"$(id -un)\" %s",
			dir, owner(fi), filepath.Join(root, ".orbit", "state")))}
	}
	if len(wrong) > 0 {
		return []Finding{fail("credentials", strings.Join(wrong, "; "),
			fmt.Sprintf("chmod 700 %s && chmod 600 %s/*.nk (a missing or empty seed is made anew at the engine's next start; clients of the old one must take the new)", dir, dir))}
	}
	return []Finding{ok("credentials", fmt.Sprintf("%s and its %d seeds are readable by their owner only", dir, len(events.Identities)))}
}

// owner names the user id that owns fi, as " (uid N)"; "" where the
// system does not say.
func owner(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf(" (uid %d)", st.Uid)
	}
	return ""
}

// natsFindings: the server answers, has JetStream and the log's streams
// with enough current replicas, fsyncs before it acknowledges, and (when
// embedded) has its reserve of free disk.
func natsFindings(ctx context.Context, f *Facts) []Finding {
	if f.Log == nil {
		return []Finding{skip("nats", "no connection to the engine's NATS server (see the engine finding)")}
	}
	out := []Finding{ok("nats", "reachable at "+f.Log.ClientURL())}
	streams, err := f.Log.Health(ctx)
	if err != nil {
		out = append(out, fail("jetstream", "the server does not serve the log's streams: "+err.Error(),
			"enable JetStream on the server (a jetstream block in its configuration) and start the engine, which creates the streams"))
	} else {
		var says []string
		for _, s := range streams {
			says = append(says, fmt.Sprintf("%s %d messages, %d bytes", s.Name, s.Messages, s.Bytes))
		}
		out = append(out, ok("jetstream", strings.Join(says, "; ")))
		out = append(out, replicaFinding(streams, f.Log.ClusterSize()))
		out = append(out, retentionFinding(f, streams))
	}
	out = append(out, fsyncFinding(ctx, f))
	out = append(out, diskFinding(f))
	return out
}

// retentionFinding: a retention policy can remove from the log. The event
// stream of a log made before retention denies purges, and no stream
// update can lift that (nats-server refuses to cancel deny_purge), so the
// policy there archives nothing and removes nothing.
func retentionFinding(f *Facts, streams []events.StreamHealth) Finding {
	denied := false
	for _, s := range streams {
		if s.Name == events.EventsStream && s.DenyPurge {
			denied = true
		}
	}
	policy := f.Config != nil && f.Config.Retention.Enabled()
	switch {
	case policy && denied:
		return fail("retention", "the configuration has a retention policy, but the log's stream "+events.EventsStream+
			" was made before retention and denies purges (JetStream cannot lift that from a stream): the policy archives and removes nothing",
			"keep the log whole and drop the retention block, or archive what finished (orbit log export --before DATE -o FILE) and start a new log, "+
				"which allows the engine's purges: engine stopped, .orbit/state/nats moved aside, orbit init --new-log (docs/architecture/retention.md)")
	case policy:
		return ok("retention", "the retention policy applies: the log allows the engine's purges")
	case denied:
		return ok("retention", "no retention policy: every event stays (the log was made before retention and denies purges)")
	}
	return ok("retention", "no retention policy: every event stays in the log")
}

// replicaFinding compares each stream's replicas with the cluster's size
// and with how many of them are current.
func replicaFinding(streams []events.StreamHealth, size int) Finding {
	var bad, low []string
	for _, s := range streams {
		switch {
		case s.Replicas > size:
			bad = append(bad, fmt.Sprintf("%s has %d replicas on a cluster of %d server(s)", s.Name, s.Replicas, size))
		case s.Current < s.Replicas:
			bad = append(bad, fmt.Sprintf("%s has %d of its %d replicas current", s.Name, s.Current, s.Replicas))
		case size >= events.DefaultClusterReplicas && s.Replicas < events.DefaultClusterReplicas:
			low = append(low, fmt.Sprintf("%s has %d replica(s) on a cluster of %d servers: losing one server can lose it", s.Name, s.Replicas, size))
		}
	}
	switch {
	case len(bad) > 0:
		return fail("replicas", strings.Join(bad, "; "), "bring the cluster's servers back (nats server report jetstream), or set nats.replicas to what the cluster holds and restart the engine")
	case len(low) > 0:
		return warn("replicas", strings.Join(low, "; "), "set nats.replicas: 3 in .orbit/config.yaml and restart the engine")
	}
	return ok("replicas", fmt.Sprintf("every stream's replicas are current, on %d server(s)", size))
}

// fsyncFinding: an acknowledged write is on disk. The embedded server's
// policy is the engine's durability; other servers' are read from their
// monitoring endpoints, each of a cluster's, since one server that fsyncs
// in the background can lose a write the others acknowledged with it.
func fsyncFinding(ctx context.Context, f *Facts) Finding {
	if len(f.Monitors) == 0 {
		if f.Status == nil {
			return skip("fsync", "the engine's durability is not known (see the engine finding)")
		}
		if external(f) {
			return warn("fsync", "the fsync policy of the NATS server at "+f.Log.ClientURL()+" cannot be seen from a client",
				"pass --nats-monitor with the monitoring URL of each of its servers (http://host:8222) to check that their jetstream blocks say sync_interval: always")
		}
		if f.Status.Durability == "relaxed" {
			return warn("fsync", "durability: relaxed: the embedded server fsyncs in the background, so a power loss can lose acknowledged events",
				"set durability: strict in .orbit/config.yaml and restart the engine")
		}
		return ok("fsync", "the embedded server fsyncs every write before acknowledging it (durability: strict)")
	}
	var good, bad, broken []string
	for _, monitor := range f.Monitors {
		var varz struct {
			Server    string `json:"server_name"`
			JetStream struct {
				Config *struct {
					SyncInterval time.Duration `json:"sync_interval"`
					SyncAlways   bool          `json:"sync_always"`
				} `json:"config"`
			} `json:"jetstream"`
		}
		if err := getJSON(ctx, strings.TrimSuffix(monitor, "/")+"/varz", &varz); err != nil {
			broken = append(broken, "the monitoring endpoint "+monitor+" does not answer: "+err.Error())
			continue
		}
		switch c := varz.JetStream.Config; {
		case c == nil:
			broken = append(broken, "server "+varz.Server+" ("+monitor+") has no JetStream")
		case !c.SyncAlways:
			every := c.SyncInterval
			if every == 0 {
				every = 2 * time.Minute
			}
			bad = append(bad, fmt.Sprintf("server %s (%s) fsyncs every %s, not before it acknowledges", varz.Server, monitor, every))
		default:
			good = append(good, varz.Server)
		}
	}
	switch {
	case len(broken) > 0:
		return fail("fsync", strings.Join(append(broken, bad...), "; "),
			"pass --nats-monitor with the URL of each server's http monitoring port, and give every server a jetstream block")
	case len(bad) > 0:
		return fail("fsync", strings.Join(bad, "; ")+": a power loss can lose acknowledged events",
			"set sync_interval: always in the jetstream block of every server of the cluster and restart them one at a time")
	}
	return ok("fsync", "server(s) "+strings.Join(good, ", ")+" fsync every write before acknowledging it (sync_interval: always)")
}

// external says whether the engine runs on a NATS server it did not start.
func external(f *Facts) bool {
	return f.ExternalURL || len(f.Monitors) > 0
}

// diskFinding compares the embedded store's free space with its reserve.
func diskFinding(f *Facts) Finding {
	if external(f) {
		return skip("disk", "the NATS server Orbit did not start manages its own disk")
	}
	dir := filepath.Join(f.Root, ".orbit", "state", "nats")
	free, err := f.FreeSpace(dir)
	if err != nil {
		return fail("disk", "cannot read the free space of "+dir+": "+err.Error(), "make "+dir+" readable")
	}
	const reserve = events.DefaultMinFreeBytes
	switch {
	case free < reserve:
		return fail("disk", fmt.Sprintf("%s has %d MiB free, less than the %d MiB the engine keeps in reserve: appends are refused", dir, free>>20, reserve>>20),
			"free space on that filesystem (orbit gc --apply, orbit log export and retention remove old work); the engine goes on by itself")
	case free < 4*reserve:
		return warn("disk", fmt.Sprintf("%s has %d MiB free, near the %d MiB reserve", dir, free>>20, reserve>>20), "free space on that filesystem")
	}
	return ok("disk", fmt.Sprintf("%s has %d MiB free (reserve %d MiB)", dir, free>>20, reserve>>20))
}

func gitFinding(ctx context.Context) Finding {
	v, err := gitops.CheckVersion(ctx)
	if err != nil {
		return fail("git", err.Error(), "install git 2.26 or later and put it first on PATH")
	}
	return ok("git", v)
}

// SupportedAgents are the oldest versions of the CLI agents Orbit drives,
// by program name: the versions its tests run (tools/agents/package.json).
var SupportedAgents = map[string]string{
	"claude": "2.1.331",
	"codex":  "0.169.0",
}

// agentProgram maps an executor's output adapter to the CLI agent whose
// version it reads.
var agentProgram = map[string]string{
	assets.OutputClaudeCode: "claude",
	assets.OutputClaudeJSON: "claude",
	assets.OutputCodex:      "codex",
	assets.OutputCodexJSONL: "codex",
}

var versionRe = regexp.MustCompile(`\d+\.\d+\.\d+`)

// agentFindings: each executor's program is on PATH and, for the CLI
// agents Orbit has adapters for, at least the supported version. A
// missing program fails only when agent steps run on the cli backend by
// default; otherwise it is needed only by activities that ask for it.
func agentFindings(ctx context.Context, f *Facts) []Finding {
	if f.Catalog == nil {
		return []Finding{skip("agents", "the catalogs do not load (see the config finding)")}
	}
	cli := f.Config != nil && f.Config.Runtime.Backend == "cli"
	var out []Finding
	for _, e := range f.Catalog.Executors() {
		x, err := f.Catalog.Executor(e.Name)
		if err != nil {
			continue
		}
		check := "agent:" + x.Name
		path, err := exec.LookPath(x.Spec.Command)
		if err != nil {
			detail := fmt.Sprintf("executor %s runs %q, which is not on PATH", x.Name, x.Spec.Command)
			fix := fmt.Sprintf("install %s (or set the executor's command to its path in .orbit/executors/%s.yaml)", x.Spec.Command, x.Name)
			if cli {
				out = append(out, fail(check, detail+" and runtime.backend is cli", fix))
			} else {
				out = append(out, warn(check, detail+": agent steps on the cli backend that use it fail", fix))
			}
			continue
		}
		program := agentProgram[x.Spec.Output]
		least, known := SupportedAgents[program]
		if !known {
			out = append(out, ok(check, path))
			continue
		}
		vctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		raw, err := exec.CommandContext(vctx, path, "--version").Output()
		cancel()
		v := versionRe.FindString(string(raw))
		switch {
		case err != nil || v == "":
			out = append(out, fail(check, fmt.Sprintf("%s --version does not say its version (%s)", path, strings.TrimSpace(string(raw)+" "+errText(err))),
				fmt.Sprintf("reinstall %s %s or later", program, least)))
		case older(v, least):
			out = append(out, fail(check, fmt.Sprintf("%s is %s %s, older than the oldest Orbit supports (%s)", path, program, v, least),
				fmt.Sprintf("upgrade %s to %s or later", program, least)))
		default:
			out = append(out, ok(check, fmt.Sprintf("%s is %s %s (supported: %s or later)", path, program, v, least)))
		}
	}
	return out
}

// sandboxFinding says how the engine's CLI agents are sandboxed on its
// machine and what that leaves unenforced. No sandbox fails when agent
// steps run on the cli backend by default and warns otherwise, as a
// missing CLI agent does; a sandbox that leaves file permissions to root
// warns.
func sandboxFinding(f *Facts) Finding {
	const check = "sandbox"
	if f.Status == nil {
		return skip(check, "the engine's sandbox is not known (see the engine finding)")
	}
	sb := f.Status.Sandbox
	if sb == nil {
		return skip(check, fmt.Sprintf("engine %s (version %s) does not say how its CLI agents are sandboxed", f.Status.Engine, f.Status.Version))
	}
	switch {
	case sb.Mode == sandbox.ModeNone:
		detail := "CLI agents run without a sandbox on engine " + f.Status.Engine + "'s machine: " + sb.Unenforced
		fix := "on Linux 5.12 or later, let the engine's user make user namespaces (sysctl user.max_user_namespaces above 0; kernel.unprivileged_userns_clone=1 where the kernel has it; on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile allowing userns for orbit; in a container, a seccomp profile allowing unshare and mount), then " + restartFix + "; until then treat an agent with a shell as trusted with the engine and keep its workspace off the project root"
		if f.Config != nil && f.Config.Runtime.Backend == "cli" {
			return fail(check, detail+", and runtime.backend is cli", fix)
		}
		return warn(check, detail, fix)
	case sb.Unenforced != "":
		return warn(check, "CLI agents run confined ("+sb.Mode+") but not everything is enforced: "+sb.Unenforced,
			"run the engine as a user of its own, not root (owning the project and its .orbit), so file permissions hold too; then "+restartFix)
	}
	as := ""
	if sb.Root {
		as = " as nobody"
	}
	return ok(check, "CLI agents run confined ("+sb.Mode+")"+as+": the file system read-only but their workspace, the engine's state and keys hidden")
}

// older compares dotted versions numerically.
func older(v, than string) bool {
	a, b := strings.Split(v, "."), strings.Split(than, ".")
	for i := range max(len(a), len(b)) {
		x, y := 0, 0
		if i < len(a) {
			x, _ = strconv.Atoi(a[i])
		}
		if i < len(b) {
			y, _ = strconv.Atoi(b[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// keyFinding names the provider keys set in the engine's environment,
// never their values.
func keyFinding(f *Facts) Finding {
	if f.Status == nil {
		return skip("provider_keys", "the engine's environment is not known (see the engine finding)")
	}
	var set, unset []string
	for _, s := range f.Status.Settings {
		if !s.Secret || strings.HasSuffix(s.Name, "_HEADERS") {
			continue
		}
		if s.Set {
			set = append(set, s.Name)
		} else {
			unset = append(unset, s.Name)
		}
	}
	if len(set) == 0 {
		return warn("provider_keys", "no provider key is set in the engine's environment ("+strings.Join(unset, ", ")+" are not): agent steps on the http backend fail",
			"export the key in the shell the engine starts from, then "+restartFix)
	}
	slices.Sort(set)
	return ok("provider_keys", "set in the engine's environment: "+strings.Join(set, ", "))
}

// clockFinding compares each engine's clock with this machine's, allowing
// for the time the answer took.
func clockFinding(f *Facts) Finding {
	if len(f.Clocks) == 0 {
		return skip("clock", "no engine told its clock (see the engine finding)")
	}
	var bad, says []string
	for _, c := range f.Clocks {
		rtt := c.Answered.Sub(c.Asked)
		mid := c.Asked.Add(rtt / 2)
		skew := c.EngineNow.Sub(mid)
		says = append(says, fmt.Sprintf("%s %s (±%v)", c.Engine, signed(skew.Round(time.Millisecond)), (rtt/2).Round(time.Millisecond)))
		if skew.Abs()-rtt/2 > f.MaxSkew {
			bad = append(bad, fmt.Sprintf("engine %s's clock is %v off this machine's", c.Engine, skew.Round(time.Millisecond)))
		}
	}
	if len(bad) > 0 {
		return fail("clock", strings.Join(bad, "; ")+fmt.Sprintf(" (more than %v): leases, timeouts and routine ticks are read across engines", f.MaxSkew),
			"run an NTP client (chrony, systemd-timesyncd) on every machine that runs an engine")
	}
	return ok("clock", "engine clocks against this machine's: "+strings.Join(says, ", "))
}

func signed(d time.Duration) string {
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

func getJSON(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
