// Command tk-postgres starts PostgreSQL in the bundled-database image of tenantkit's Helm chart: on first
// start it makes the cluster in $PGDATA (initdb with the superuser's password and scram-sha-256 for every
// connection), then it becomes `postgres` listening on every address of the Pod.
//
// Environment: PGDATA (default /var/lib/postgresql/data), POSTGRES_USER (default postgres),
// POSTGRES_PASSWORD_FILE or POSTGRES_PASSWORD (one is required).
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "tk-postgres: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	data := env("PGDATA", "/var/lib/postgresql/data")
	user := env("POSTGRES_USER", "postgres")
	bin, err := binDir()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		password, err := password()
		if err != nil {
			return err
		}
		if err := initialize(bin, data, user, password); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	args := []string{"postgres", "-D", data, "-c", "listen_addresses=*", "-c", "unix_socket_directories=/tmp"}
	return syscall.Exec(filepath.Join(bin, "postgres"), append(args, os.Args[1:]...), os.Environ())
}

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func binDir() (string, error) {
	postgres, err := exec.LookPath("postgres")
	if err != nil {
		return "", fmt.Errorf("postgres is not on PATH (%s)", os.Getenv("PATH"))
	}
	return filepath.Dir(postgres), nil
}

func password() (string, error) {
	if file := os.Getenv("POSTGRES_PASSWORD_FILE"); file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("POSTGRES_PASSWORD_FILE: %w", err)
		}
		return strings.TrimRight(string(data), "\r\n"), nil
	}
	if v := os.Getenv("POSTGRES_PASSWORD"); v != "" {
		return v, nil
	}
	return "", errors.New("set POSTGRES_PASSWORD_FILE (a mounted Secret key) or POSTGRES_PASSWORD: the superuser needs a password before the database accepts connections from other Pods")
}

// initialize makes the database cluster in a temporary folder beside data and renames it into place, so
// a Pod killed during initdb starts over instead of finding half a cluster.
func initialize(bin, data, user, password string) error {
	partial := data + ".initdb"
	if err := os.RemoveAll(partial); err != nil {
		return err
	}
	pwfile, err := os.CreateTemp("", "pwfile")
	if err != nil {
		return err
	}
	defer os.Remove(pwfile.Name())
	if _, err := pwfile.WriteString(password + "\n"); err != nil {
		return err
	}
	if err := pwfile.Close(); err != nil {
		return err
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", partial, "-U", user, "--pwfile="+pwfile.Name(),
		"--auth=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-instructions")
	initdb.Stdout, initdb.Stderr = os.Stdout, os.Stderr
	if err := initdb.Run(); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	hba, err := os.OpenFile(filepath.Join(partial, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := hba.WriteString("# tk-postgres: other Pods connect with the password\nhost all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n"); err != nil {
		return err
	}
	if err := hba.Close(); err != nil {
		return err
	}
	if err := os.RemoveAll(data); err != nil {
		return err
	}
	return os.Rename(partial, data)
}
