package distribute

import (
	"fmt"
	"regexp"
	"strings"

	distv1alpha1 "flotilla.dev/flotilla/api/distribution/v1alpha1"
)

// Image is an image reference split into its components:
// [registry/]repository[:tag][@digest].
type Image struct {
	Registry, Repository, Tag, Digest string
}

// ParseImage splits ref. The first path component is the registry when the
// reference has more than one and it looks like a host (it holds a "." or a
// ":", or is "localhost"), as the container runtimes read it. Nothing is
// normalised: "nginx" has no registry, not docker.io.
func ParseImage(ref string) Image {
	var im Image
	if i := strings.Index(ref, "@"); i >= 0 {
		ref, im.Digest = ref[:i], ref[i+1:]
	}
	if i := strings.LastIndex(ref, ":"); i >= 0 && !strings.Contains(ref[i+1:], "/") {
		ref, im.Tag = ref[:i], ref[i+1:]
	}
	if first, rest, ok := strings.Cut(ref, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		im.Registry, ref = first, rest
	}
	im.Repository = ref
	return im
}

// String joins the components back into a reference.
func (im Image) String() string {
	var b strings.Builder
	if im.Registry != "" {
		b.WriteString(im.Registry + "/")
	}
	b.WriteString(im.Repository)
	if im.Tag != "" {
		b.WriteString(":" + im.Tag)
	}
	if im.Digest != "" {
		b.WriteString("@" + im.Digest)
	}
	return b.String()
}

var (
	registryRE   = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?(:[0-9]+)?$`)
	repositoryRE = regexp.MustCompile(`^[a-z0-9]+([._-]+[a-z0-9]+)*(/[a-z0-9]+([._-]+[a-z0-9]+)*)*$`)
	tagRE        = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	digestRE     = regexp.MustCompile(`^[a-z0-9]+([+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$`)
)

// CheckImageValue says whether v can be the component c of an image.
func CheckImageValue(c distv1alpha1.ImageComponent, v string) error {
	var re *regexp.Regexp
	switch c {
	case distv1alpha1.Registry:
		re = registryRE
	case distv1alpha1.Repository:
		re = repositoryRE
	case distv1alpha1.Tag:
		re = tagRE
	case distv1alpha1.Digest:
		re = digestRE
	default:
		return fmt.Errorf("unknown image component %q (want Registry, Repository, Tag or Digest)", c)
	}
	if !re.MatchString(v) {
		return fmt.Errorf("%q is not a valid image %s", v, strings.ToLower(string(c)))
	}
	return nil
}

// OverrideImage applies one image override (its value already expanded) to ref.
func OverrideImage(ref string, o distv1alpha1.ImageOverride, value string) (string, error) {
	im := ParseImage(ref)
	var field *string
	switch o.Component {
	case distv1alpha1.Registry:
		field = &im.Registry
	case distv1alpha1.Repository:
		field = &im.Repository
	case distv1alpha1.Tag:
		field = &im.Tag
	case distv1alpha1.Digest:
		field = &im.Digest
	default:
		return "", fmt.Errorf("unknown image component %q", o.Component)
	}
	switch op := opOrReplace(o.Operation); op {
	case distv1alpha1.OpRemove:
		if o.Component == distv1alpha1.Repository {
			return "", fmt.Errorf("an image's repository cannot be removed")
		}
		*field = ""
	case distv1alpha1.OpAdd, distv1alpha1.OpReplace:
		if op == distv1alpha1.OpAdd && *field != "" {
			return ref, nil // add keeps a component the image has
		}
		if err := CheckImageValue(o.Component, value); err != nil {
			return "", err
		}
		*field = value
	default:
		return "", fmt.Errorf("unknown operation %q (want add, replace or remove)", op)
	}
	return im.String(), nil
}

// opOrReplace is op, replace when unset (the CRD's default).
func opOrReplace(op distv1alpha1.Operation) distv1alpha1.Operation {
	if op == "" {
		return distv1alpha1.OpReplace
	}
	return op
}
