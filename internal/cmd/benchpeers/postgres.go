package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// postgres is a PostgreSQL cluster of the benchmark's own: initdb'd in a
// temporary directory, listening on a free loopback port, with fsync and
// synchronous_commit on (their defaults, set so that no configuration
// elsewhere can turn them off). Run as root, the server runs as the
// postgres user (or nobody), since initdb refuses root.
type postgres struct {
	bin     string // the directory of initdb, pg_ctl, postgres
	dir     string
	port    int
	version string
	cred    *syscall.Credential
}

// findPostgres returns the directory of PostgreSQL's programs: dir when
// given, else that of pg_ctl on PATH, else Debian's newest
// /usr/lib/postgresql/<version>/bin.
func findPostgres(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real), nil
		}
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	slices.SortFunc(found, func(a, b string) int { return majorOf(a) - majorOf(b) })
	if len(found) == 0 {
		return "", errors.New("no PostgreSQL: pg_ctl is not on PATH nor in /usr/lib/postgresql/*/bin (apt-get install postgresql)")
	}
	return filepath.Dir(found[len(found)-1]), nil
}

func majorOf(pgCtl string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(pgCtl))))
	return n
}

// startPostgres makes a cluster in dir and starts it.
func startPostgres(ctx context.Context, bin, dir string) (*postgres, error) {
	p := &postgres{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		cred, err := serverUser()
		if err != nil {
			return nil, err
		}
		p.cred = cred
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if p.cred != nil {
		if err := os.Chown(dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			return nil, err
		}
	}
	out, err := p.command(ctx, "postgres", "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("postgres --version: %w", err)
	}
	p.version = strings.TrimSpace(strings.TrimPrefix(string(out), "postgres (PostgreSQL) "))
	data := filepath.Join(dir, "data")
	if out, err := p.command(ctx, "initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	if p.port, err = freePort(); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf("\n# bench-peers\nlisten_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nfsync = on\nsynchronous_commit = on\nfull_page_writes = on\n", p.port, dir)
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if out, err := p.command(ctx, "pg_ctl", "-D", data, "-l", filepath.Join(dir, "server.log"), "-w", "-t", "120", "start").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pg_ctl start: %w\n%s", err, out)
	}
	return p, nil
}

// serverUser is whom the server runs as under root: postgres, which
// Debian's package makes, else nobody.
func serverUser() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root, and neither the postgres user nor nobody exists to run PostgreSQL as")
}

func (p *postgres) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	return cmd
}

// url is the address DBOS is given: a database of its own, which DBOS
// creates.
func (p *postgres) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/bench_peers?sslmode=disable", p.port)
}

// settings reads back what the server runs with.
func (p *postgres) settings(ctx context.Context) (string, error) {
	cmd := p.command(ctx, "psql", "-h", "127.0.0.1", "-p", strconv.Itoa(p.port), "-U", "postgres", "-At", "-c",
		"select name || '=' || setting from pg_settings where name in ('fsync','synchronous_commit','wal_sync_method','full_page_writes') order by name")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("psql: %w", err)
	}
	return strings.Join(strings.Fields(out.String()), ", "), nil
}

// pids are the server's processes: the postmaster and its children.
func (p *postgres) pids() []int {
	data, err := os.ReadFile(filepath.Join(p.dir, "data", "postmaster.pid"))
	if err != nil {
		return nil
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return nil
	}
	return append([]int{pid}, children(pid)...)
}

func (p *postgres) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = p.command(ctx, "pg_ctl", "-D", filepath.Join(p.dir, "data"), "-m", "fast", "-w", "stop").Run()
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var kids []int
	for _, stat := range stats {
		data, err := os.ReadFile(stat)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == pid {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
			kids = append(kids, child)
		}
	}
	return kids
}

// freePort returns a loopback port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
