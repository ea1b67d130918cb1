package ec2host

import "time"

// hourlyPrices are Linux on-demand prices in USD per hour (us-east-1 and
// us-east-2 list prices). They only feed cost estimates; pass an override
// for other types or regions.
var hourlyPrices = map[string]float64{
	"r8i.metal-96xl": 14.45, // the runbook's box
	"m6i.metal":      4.61,
	"m5.metal":       4.608,
	"c6i.metal":      5.44,
	"r6i.metal":      8.064,
	"c7i.metal-48xl": 8.568,
	"m7i.metal-48xl": 9.677,
	"r7i.metal-48xl": 12.701,
	"m7i.2xlarge":    0.4032,
	"c6i.large":      0.085,
	"t3.medium":      0.0416,
	"t3.micro":       0.0104,
}

// HourlyPriceUSD returns the price of an instance type: override when it
// is positive, else the built-in table; ok is false when neither knows it.
func HourlyPriceUSD(instanceType string, override float64) (price float64, ok bool) {
	if override > 0 {
		return override, true
	}
	p, ok := hourlyPrices[instanceType]
	return p, ok
}

// CostUSD is the cost of d at an hourly price.
func CostUSD(hourly float64, d time.Duration) float64 {
	return hourly * d.Hours()
}
