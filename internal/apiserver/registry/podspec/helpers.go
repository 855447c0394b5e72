package podspec

import (
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func contains(list []string, s string) bool { return slices.Contains(list, s) }

func dns1123Label(path *field.Path, value string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range content.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(path, value, msg))
	}
	return errs
}

func dns1123Subdomain(path *field.Path, value string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range content.IsDNS1123Subdomain(value) {
		errs = append(errs, field.Invalid(path, value, msg))
	}
	return errs
}

func nonNegative(v int64, path *field.Path) field.ErrorList {
	if v < 0 {
		return field.ErrorList{field.Invalid(path, v, "must be greater than or equal to 0")}
	}
	return nil
}

// validateLocalDescendingPath checks a relative path that stays inside its
// base directory: not absolute and without ".." elements.
func validateLocalDescendingPath(p string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		errs = append(errs, field.Invalid(path, p, "must be a relative path"))
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			errs = append(errs, field.Invalid(path, p, "must not contain '..'"))
			break
		}
	}
	return errs
}
