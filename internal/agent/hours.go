package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// IsOpen says whether at is within the business hours, in their time zone.
func IsOpen(bh *v1alpha1.BusinessHours, at time.Time) (bool, error) {
	loc, err := time.LoadLocation(bh.TimeZone)
	if err != nil {
		return false, fmt.Errorf("business hours: unknown time zone %q", bh.TimeZone)
	}
	local := at.In(loc)
	day := strings.ToLower(local.Weekday().String())
	now := local.Format("15:04")
	for _, h := range bh.Hours {
		if h.Day == day && now >= h.From && now < h.To {
			return true, nil
		}
	}
	return false, nil
}
