// Package billing prices messages and keeps projects' balances: the PriceList resources (per
// channel and destination prefix), SMS segments, and the ledger in Postgres, moved in the
// transaction that accepts a send so concurrent sends cannot take a balance past its credit
// limit. Amounts are micro-dollars (1e-6 USD).
package billing

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// Micros is an amount of micro-dollars.
type Micros int64

// ParseUSD reads a decimal amount of dollars of up to 6 decimals ("0.0079").
func ParseUSD(s v1alpha1.USDAmount) (Micros, error) {
	str := string(s)
	whole, frac, _ := strings.Cut(str, ".")
	if whole == "" || len(frac) > 6 || strings.Trim(whole+frac, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not an amount of dollars with up to 6 decimals", str)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > 1e9 {
		return 0, fmt.Errorf("%q is not an amount of dollars with up to 6 decimals", str)
	}
	f := int64(0)
	if frac != "" {
		f, _ = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
	}
	return Micros(w*1_000_000 + f), nil
}

// USD is m in dollars, exact to 6 decimals (v2 amounts are rounded to 6).
func (m Micros) USD() float64 { return math.Round(float64(m)) / 1e6 }

// Cents is m in cents (the balance API's unit), to 4 decimals.
func (m Micros) Cents() float64 { return float64(m) / 1e4 }

// FromCents is an amount of cents as micro-dollars.
func FromCents(c int64) Micros { return Micros(c * 10_000) }

func (m Micros) String() string {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	return fmt.Sprintf("%s%d.%06d", sign, m/1_000_000, m%1_000_000)
}
