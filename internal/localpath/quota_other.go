//go:build !linux

package localpath

import "errors"

// Project quotas are Linux's: elsewhere setQuota enforces nothing, and
// none of these is called.
const quotasBuilt = false

var errNoQuotas = errors.New("project quotas are Linux's")

func quotaState(string) (bool, bool, error)             { return false, false, errNoQuotas }
func readQuota(filesystem, uint32) (quotaUse, error)    { return quotaUse{}, errNoQuotas }
func writeQuotaLimit(filesystem, uint32, uint64) error  { return errNoQuotas }
func deviceOf(string) (uint64, string, error)           { return 0, "", errNoQuotas }
func readProject(string) (uint32, error)                { return 0, errNoQuotas }
func writeProject(string, uint32, uint64) (bool, error) { return false, errNoQuotas }
