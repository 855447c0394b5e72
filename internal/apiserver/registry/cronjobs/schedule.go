package cronjobs

import "github.com/robfig/cron/v3"

// parseSchedule checks a schedule with the parser the cron job controller
// reads it with (robfig/cron's standard parser): five fields (minute hour
// day-of-month month day-of-week) or a macro such as @hourly or
// "@every 1h30m", with an optional TZ= or CRON_TZ= prefix.
func parseSchedule(spec string) error {
	_, err := cron.ParseStandard(spec)
	return err
}
