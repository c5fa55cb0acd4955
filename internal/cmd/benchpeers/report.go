package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report gathers a run's measurements and prints them.
type report struct {
	cfg                *config
	started            time.Time
	loadStart, loadEnd string
	hellos             []hello
	workloads          []workload
	times              map[string]map[string][]time.Duration // by workload label, then system
	cpu                map[string]map[string][]time.Duration // CPU time of the system's processes, the same way
	failed             map[string]error
	syncs              map[string]syncCount
	straceErr          error
}

func (r *report) add(label, system string, wall, cpu time.Duration) {
	if r.times[label] == nil {
		r.times[label] = map[string][]time.Duration{}
		r.cpu[label] = map[string][]time.Duration{}
	}
	r.times[label][system] = append(r.times[label][system], wall)
	r.cpu[label][system] = append(r.cpu[label][system], cpu)
}

// names are how the table heads each system.
var names = map[string]string{"orbit": "Orbit", "dbos": "DBOS", "temporal": "Temporal"}

func (r *report) write(w io.Writer) {
	fmt.Fprintf(w, "\nbench-peers: %d interleaved rounds, medians (min–max); %d CPUs; load average %s at the start, %s at the end; %s in all\n\n",
		r.cfg.rounds, runtime.NumCPU(), r.loadStart, r.loadEnd, time.Since(r.started).Round(time.Second))
	for _, h := range r.hellos {
		var vs []string
		for name, v := range h.Versions {
			vs = append(vs, name+" "+v)
		}
		slices.Sort(vs)
		fmt.Fprintf(w, "- %s: %s; %s\n", names[h.System], strings.Join(vs, ", "), h.Durability)
	}
	fmt.Fprintln(w)

	systems := r.cfg.systems
	var peers []string
	for _, s := range systems {
		if s != "orbit" {
			peers = append(peers, s)
		}
	}
	hasOrbit := slices.Contains(systems, "orbit")
	head := []string{"workload"}
	for _, s := range systems {
		head = append(head, names[s])
	}
	if hasOrbit {
		for _, p := range peers {
			head = append(head, "Orbit ÷ "+names[p])
		}
	}
	rows := [][]string{head}
	for _, wl := range r.workloads {
		row := []string{wl.label}
		med := map[string]time.Duration{}
		for _, s := range systems {
			ds := r.times[wl.label][s]
			if len(ds) == 0 {
				row = append(row, "—")
				continue
			}
			med[s] = median(ds)
			cell := fmt.Sprintf("%s s (%s–%s)", seconds(med[s]), seconds(slices.Min(ds)), seconds(slices.Max(ds)))
			if wl.req.Workload == runs {
				cell += fmt.Sprintf(", %.0f runs/s", float64(wl.req.N)/med[s].Seconds())
			}
			row = append(row, cell)
		}
		if hasOrbit {
			for _, p := range peers {
				if med["orbit"] == 0 || med[p] == 0 {
					row = append(row, "—")
					continue
				}
				row = append(row, fmt.Sprintf("%.2f×", med["orbit"].Seconds()/med[p].Seconds()))
			}
		}
		rows = append(rows, row)
	}
	table(w, rows)

	fmt.Fprintf(w, "\nCPU time of each system's processes over a run (its side, its server's, the echo they fork), median; in parentheses, that CPU time ÷ the run's wall time:\n\n")
	rows = [][]string{head[:1+len(systems)]}
	for _, wl := range r.workloads {
		row := []string{wl.label}
		for _, s := range systems {
			cs, ds := r.cpu[wl.label][s], r.times[wl.label][s]
			if len(cs) == 0 {
				row = append(row, "—")
				continue
			}
			row = append(row, fmt.Sprintf("%s s (%.2f)", seconds(median(cs)), median(cs).Seconds()/median(ds).Seconds()))
		}
		rows = append(rows, row)
	}
	table(w, rows)

	if len(r.syncs) > 0 {
		fmt.Fprintf(w, "\nfsync-family calls over one run of W1 (%d trivial steps), strace -f of each system's processes (its side, and its server's):\n\n", r.cfg.steps)
		rows := [][]string{append(append([]string{"system"}, syncCalls...), "total", "per step", "wall time in them, summed over threads", "the run's wall time, traced")}
		for _, s := range systems {
			c, ok := r.syncs[s]
			if !ok {
				continue
			}
			row := []string{names[s]}
			for _, name := range syncCalls {
				row = append(row, fmt.Sprint(c.calls[name]))
			}
			row = append(row, fmt.Sprint(c.total()), fmt.Sprintf("%.2f", float64(c.total())/float64(c.steps)),
				fmt.Sprintf("%.2f s", c.seconds), seconds(c.wall)+" s")
			rows = append(rows, row)
		}
		table(w, rows)
	}
	if r.straceErr != nil {
		fmt.Fprintf(w, "\nfsyncs not counted: %v\n", r.straceErr)
	}
	for _, s := range systems {
		if err := r.failed[s]; err != nil {
			fmt.Fprintf(w, "\n%s failed: %v\n", names[s], err)
		}
	}
}

// table prints rows as a Markdown table, the first row its head.
func table(w io.Writer, rows [][]string) {
	for i, row := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		if i == 0 {
			fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(row)))
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// seconds formats d in seconds to three significant digits.
func seconds(d time.Duration) string {
	s := d.Seconds()
	switch {
	case s >= 10:
		return fmt.Sprintf("%.1f", s)
	case s >= 1:
		return fmt.Sprintf("%.2f", s)
	}
	return fmt.Sprintf("%.3f", s)
}

// loadAverage is the machine's load over 1, 5 and 15 minutes.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
