package localpg

import (
	"context"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"
)

// EnsureDatabase creates database name on the server unless it exists, and returns its URL.
func EnsureDatabase(ctx context.Context, adminURL, name string) (string, error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", fmt.Errorf("connect to Postgres to create database %s: %w", name, err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", fmt.Errorf("look up database %s: %w", name, err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return "", fmt.Errorf("create database %s: %w", name, err)
		}
	}
	return WithDatabase(adminURL, name)
}

// CreateDatabaseFrom creates database name as a copy of template (fast: a file copy on the server).
func CreateDatabaseFrom(ctx context.Context, adminURL, name, template string) (string, error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", fmt.Errorf("connect to Postgres to create database %s: %w", name, err)
	}
	defer conn.Close(ctx)
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		sql += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	if _, err := conn.Exec(ctx, sql); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return WithDatabase(adminURL, name)
}

// DropDatabase drops database name, disconnecting its sessions first.
func DropDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to Postgres to drop database %s: %w", name, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// WithDatabase returns adminURL pointed at database name.
func WithDatabase(adminURL, name string) (string, error) {
	u, err := url.Parse(adminURL)
	if err != nil || u.Scheme == "" {
		return "", fmt.Errorf("database URL must be a postgres:// URL to derive the URL of database %s", name)
	}
	u.Path = "/" + name
	return u.String(), nil
}
