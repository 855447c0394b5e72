package apiserver

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch/internal/storage"
)

func (s *Server) get(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	out, err := s.codecs.negotiateOutput(r, "Table", "PartialObjectMetadata")
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	obj, err := rs.get(r.Context(), info.Namespace, info.Name)
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	result, err := s.transform(r, rs, out, obj, false)
	if err != nil {
		s.respondError(w, r, err, rs.gr, info.Name)
		return
	}
	s.write(w, out, http.StatusOK, result)
}

// listRequest reads what a list or watch asks for: its options, the output
// the client accepts and the selection.
func (s *Server) listRequest(r *http.Request, rs *resourceStore, allowAs ...string) (metav1.ListOptions, output, selection, error) {
	var opts metav1.ListOptions
	if err := s.decodeParams(r, &opts); err != nil {
		return opts, output{}, selection{}, badRequest("invalid list options: %v", err)
	}
	out, err := s.codecs.negotiateOutput(r, allowAs...)
	if err != nil {
		return opts, out, selection{}, err
	}
	sel, err := rs.newSelection(opts.LabelSelector, opts.FieldSelector)
	return opts, out, sel, err
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, info requestInfo, rs *resourceStore) {
	opts, out, sel, err := s.listRequest(r, rs, "Table", "PartialObjectMetadataList")
	if err != nil {
		s.respondError(w, r, err, rs.gr, "")
		return
	}
	list, err := s.listObjects(r.Context(), rs, info.Namespace, opts, sel)
	if err != nil {
		s.respondError(w, r, err, rs.gr, "")
		return
	}
	result, err := s.transform(r, rs, out, list, true)
	if err != nil {
		s.respondError(w, r, err, rs.gr, "")
		return
	}
	s.write(w, out, http.StatusOK, result)
}

// listObjects answers a list from the watch cache when it can (no pagination,
// or resourceVersion "0") and from storage otherwise.
func (s *Server) listObjects(ctx context.Context, rs *resourceStore, namespace string, opts metav1.ListOptions, sel selection) (runtime.Object, error) {
	if opts.ResourceVersionMatch != "" && opts.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan &&
		opts.ResourceVersionMatch != metav1.ResourceVersionMatchExact {
		return nil, badRequest("resourceVersionMatch %q is not supported: use NotOlderThan or Exact", opts.ResourceVersionMatch)
	}
	if opts.ResourceVersionMatch != "" && (opts.ResourceVersion == "" || opts.Continue != "") {
		return nil, badRequest("resourceVersionMatch is forbidden unless resourceVersion is provided, and with continue")
	}
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	exact := opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact
	if exact && rv == 0 {
		return nil, badRequest("resourceVersionMatch \"Exact\" needs a resourceVersion other than \"0\"")
	}
	if opts.Continue != "" {
		return s.listFromStorage(ctx, rs, namespace, opts, sel, 0)
	}
	fromCache := opts.ResourceVersion == "0" || (!exact && opts.Limit == 0)
	if !fromCache {
		return s.listFromStorage(ctx, rs, namespace, opts, sel, rv)
	}
	minRev := rv
	if opts.ResourceVersion == "" {
		if minRev, err = rs.store.CurrentRevision(ctx); err != nil {
			return nil, err
		}
	}
	objects, revision, err := rs.cache.List(ctx, minRev, rs.listPrefix(namespace))
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		// The cache did not catch up in time: read etcd instead.
		return s.listFromStorage(ctx, rs, namespace, opts, sel, 0)
	}
	if err != nil {
		return nil, err
	}
	items := make([]runtime.Object, 0, len(objects))
	for _, o := range objects {
		if obj := o.Value.(runtime.Object); sel.matches(obj) {
			items = append(items, obj)
		}
	}
	return rs.newList(items, revision, "", nil)
}

// listFromStorage reads one page from etcd, at revision (0: latest) or at the
// revision a continue token names.
func (s *Server) listFromStorage(ctx context.Context, rs *resourceStore, namespace string, opts metav1.ListOptions, sel selection, revision int64) (runtime.Object, error) {
	prefix := rs.listPrefix(namespace)
	start := prefix
	if opts.Continue != "" {
		token, err := decodeContinue(opts.Continue)
		if err != nil {
			return nil, err
		}
		start, revision = rs.prefix+token.Start, max(token.Revision, 0)
		if !strings.HasPrefix(start, prefix) {
			return nil, badRequest("the continue token does not belong to this list: start the list again without it")
		}
	}
	var items []runtime.Object
	limit := opts.Limit
	for {
		page, err := rs.store.List(ctx, prefix, storage.ListOptions{Revision: revision, Limit: limit, StartKey: start})
		if err != nil {
			if errors.Is(err, storage.ErrCompacted) && opts.Continue != "" {
				return nil, expiredContinue(start[len(rs.prefix):])
			}
			return nil, err
		}
		revision = page.Revision
		for i, kv := range page.KVs {
			obj, err := rs.decode(kv)
			if err != nil {
				return nil, err
			}
			if !sel.matches(obj) {
				continue
			}
			items = append(items, obj)
			if limit > 0 && int64(len(items)) == limit {
				more := page.More || i < len(page.KVs)-1
				if !more {
					return rs.newList(items, revision, "", nil)
				}
				next := encodeContinue(revision, kv.Key[len(rs.prefix):]+"\x00")
				var remaining *int64
				if sel.everything() {
					n := page.Remaining + int64(len(page.KVs)-1-i)
					remaining = &n
				}
				return rs.newList(items, revision, next, remaining)
			}
		}
		if !page.More || len(page.KVs) == 0 {
			return rs.newList(items, revision, "", nil)
		}
		start = page.KVs[len(page.KVs)-1].Key + "\x00"
	}
}

// expiredContinue is the 410 for a continue token whose revision was
// compacted; its metadata.continue resumes at the latest revision.
func expiredContinue(start string) error {
	err := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")
	err.ErrStatus.ListMeta.Continue = encodeContinue(-1, start)
	return err
}

// newList builds the typed list object.
func (rs *resourceStore) newList(items []runtime.Object, revision int64, next string, remaining *int64) (runtime.Object, error) {
	list := rs.res.NewList()
	if err := meta.SetList(list, items); err != nil {
		return nil, err
	}
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	listMeta.SetResourceVersion(strconv.FormatInt(revision, 10))
	listMeta.SetContinue(next)
	listMeta.SetRemainingItemCount(remaining)
	list.GetObjectKind().SetGroupVersionKind(rs.res.GroupVersion.WithKind(rs.res.Kind + "List"))
	// Items of a built-in list carry no apiVersion/kind, as upstream (SetList
	// copied them, so this writes no cached object). A custom resource list's
	// items keep theirs, as upstream's do; they share their maps with the
	// watch cache's objects, which must never be written.
	meta.EachListItem(list, func(item runtime.Object) error {
		if _, ok := item.(*unstructured.Unstructured); !ok {
			item.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		}
		return nil
	})
	return list, nil
}

func parseRV(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest("invalid resource version \"" + rv + "\": it must be a non-negative integer the server gave you")
	}
	return n, nil
}
