package tpcc

import (
	"math/rand/v2"
	"strings"
)

// Random inputs of the TPC-C specification (clauses 2.1.5, 2.1.6 and
// 4.3.2): uniform numbers, NURand, random strings and customer last names.

// NURand constants: the A of each non-uniform distribution (2.1.6).
const (
	nuLast = 255  // C_LAST, over 0..999
	nuCID  = 1023 // C_ID, over 1..3000
	nuItem = 8191 // OL_I_ID, over 1..100000
)

// Constants are the C values of the three NURand distributions. The load
// uses one set and the runs another, related as clause 2.1.6.1 requires, so
// the customers a run looks up by name are not exactly the ones the load
// made most popular.
type Constants struct {
	Last int `json:"c_last"`
	CID  int `json:"c_id"`
	Item int `json:"ol_i_id"`
}

// newLoadConstants draws the load's C values.
func newLoadConstants(r *rand.Rand) Constants {
	return Constants{Last: between(r, 0, nuLast), CID: between(r, 0, nuCID), Item: between(r, 0, nuItem)}
}

// runConstants draws the runs' C values from the load's: C_ID and OL_I_ID
// are free, C_LAST must differ from the load's by 65 to 119, and by
// neither 96 nor 112 (2.1.6.1).
func runConstants(r *rand.Rand, load Constants) Constants {
	c := Constants{CID: between(r, 0, nuCID), Item: between(r, 0, nuItem)}
	for {
		c.Last = between(r, 0, nuLast)
		if validLastDelta(c.Last, load.Last) {
			return c
		}
	}
}

func validLastDelta(run, load int) bool {
	d := run - load
	if d < 0 {
		d = -d
	}
	return d >= 65 && d <= 119 && d != 96 && d != 112
}

// between is uniform over [lo, hi].
func between(r *rand.Rand, lo, hi int) int {
	return lo + r.IntN(hi-lo+1)
}

// nuRand is NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
func nuRand(r *rand.Rand, a, c, x, y int) int {
	return (((between(r, 0, a) | between(r, x, y)) + c) % (y - x + 1)) + x
}

const (
	alnum   = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digits  = "0123456789"
)

// astring is a random a-string of length lo to hi (4.3.2.2).
func astring(r *rand.Rand, lo, hi int) string { return fromSet(r, alnum, between(r, lo, hi)) }

// nstring is a random n-string of length lo to hi.
func nstring(r *rand.Rand, lo, hi int) string { return fromSet(r, digits, between(r, lo, hi)) }

func fromSet(r *rand.Rand, set string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = set[r.IntN(len(set))]
	}
	return string(b)
}

// withOriginal is an a-string of 26 to 50 characters, of which 10% hold
// "ORIGINAL" at a random place (I_DATA and S_DATA, 4.3.3.1).
func withOriginal(r *rand.Rand) string {
	s := astring(r, 26, 50)
	if r.IntN(10) != 0 {
		return s
	}
	at := r.IntN(len(s) - len("ORIGINAL") + 1)
	return s[:at] + "ORIGINAL" + s[at+len("ORIGINAL"):]
}

// zip is a zip code: 4 random digits and "11111" (4.3.2.7).
func zip(r *rand.Rand) string { return nstring(r, 4, 4) + "11111" }

var syllables = [10]string{"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"}

// lastName is the C_LAST of number n in 0..999: its three digits' syllables
// (4.3.2.3).
func lastName(n int) string {
	var b strings.Builder
	b.WriteString(syllables[n/100])
	b.WriteString(syllables[n/10%10])
	b.WriteString(syllables[n%10])
	return b.String()
}

// cents is a random amount from lo to hi cents, in currency units.
func cents(r *rand.Rand, lo, hi int) float64 { return float64(between(r, lo, hi)) / 100 }

// fraction is a random number from lo to hi ten-thousandths (a tax or a
// discount, numeric(4,4)).
func fraction(r *rand.Rand, lo, hi int) float64 { return float64(between(r, lo, hi)) / 10000 }
