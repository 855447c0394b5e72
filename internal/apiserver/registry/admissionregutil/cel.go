package admissionregutil

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	celgo "github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// maxMatchConditions is how many match conditions a webhook or policy may have.
const maxMatchConditions = 64

// baseEnv is upstream's CEL base environment at the compatibility version
// of this apiserver.
func baseEnv() *environment.EnvSet {
	return environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
}

// statelessCompiler compiles expressions that cannot see variables (match
// conditions, and every expression of a validating policy without
// variables). Building its environments is costly, so it is built once.
var statelessCompiler = sync.OnceValue(func() plugincel.Compiler {
	return plugincel.NewCompiler(baseEnv())
})

// ValidateMatchConditions checks the match conditions of a webhook or
// policy: at most 64, names unique qualified names, and expressions that
// compile to a bool in upstream's match condition environment (with params
// when the policy has a paramKind, and the authorizer). Expressions in
// stored compile in the environment of stored expressions.
func ValidateMatchConditions(conds []admissionregistrationv1.MatchCondition, params bool, stored sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > maxMatchConditions {
		errs = append(errs, field.TooMany(p, len(conds), maxMatchConditions))
	}
	names := sets.New[string]()
	for i, c := range conds {
		cp := p.Index(i)
		if expr := strings.TrimSpace(c.Expression); expr == "" {
			errs = append(errs, field.Required(cp.Child("expression"), ""))
		} else {
			accessor := &matchconditions.MatchCondition{Expression: expr}
			decls := plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true}
			errs = append(errs, compile(statelessCompiler(), accessor, decls, envType(stored, expr), cp.Child("expression"))...)
		}
		if c.Name == "" {
			errs = append(errs, field.Required(cp.Child("name"), ""))
		} else {
			for _, msg := range content.IsQualifiedName(c.Name) {
				errs = append(errs, field.Invalid(cp.Child("name"), c.Name, msg))
			}
			if names.Has(c.Name) {
				errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
			}
			names.Insert(c.Name)
		}
	}
	return errs
}

// Expressions compiles the CEL expressions of one policy. With variables,
// each variable compiled is in scope for what is compiled after it.
type Expressions struct {
	compiler plugincel.Compiler
	params   bool
	stored   sets.Set[string]
}

// NewExpressions returns a compiler for one policy's expressions: with
// variables when composition is true, with params when the policy has a
// paramKind; expressions in stored (those of the stored policy, on an
// update) compile in the environment of stored expressions.
func NewExpressions(composition, params bool, stored sets.Set[string]) (*Expressions, error) {
	e := &Expressions{compiler: statelessCompiler(), params: params, stored: stored}
	if composition {
		c, err := plugincel.NewCompositedCompiler(baseEnv())
		if err != nil {
			return nil, fmt.Errorf("cannot build the CEL environment with variables: %w", err)
		}
		e.compiler = c
	}
	return e, nil
}

// Compile checks that accessor's expression compiles to one of its return
// types, with the authorizer and the patch types when asked for.
func (e *Expressions) Compile(accessor plugincel.ExpressionAccessor, authorizer, patchTypes bool, p *field.Path) field.ErrorList {
	decls := plugincel.OptionalVariableDeclarations{HasParams: e.params, HasAuthorizer: authorizer, HasPatchTypes: patchTypes}
	return compile(e.compiler, accessor, decls, envType(e.stored, accessor.GetExpression()), p)
}

// Variable checks a variable's name and compiles its expression, which
// then is in scope, as variables.NAME, for what is compiled after it.
func (e *Expressions) Variable(v admissionregistrationv1.Variable, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Name) == "" {
		errs = append(errs, field.Required(p.Child("name"), "name is not specified"))
	} else if !isCELIdentifier(v.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), v.Name, "must be a valid CEL identifier"))
	}
	if strings.TrimSpace(v.Expression) == "" {
		return append(errs, field.Required(p.Child("expression"), "expression is not specified"))
	}
	composited, ok := e.compiler.(*plugincel.CompositedCompiler)
	if !ok {
		return append(errs, field.InternalError(p, errors.New("variable composition is not allowed")))
	}
	variable := &Variable{Name: v.Name, Expression: v.Expression}
	decls := plugincel.OptionalVariableDeclarations{HasParams: e.params, HasAuthorizer: true}
	result := composited.CompileAndStoreVariable(variable, decls, envType(e.stored, v.Expression))
	if result.Error != nil {
		errs = append(errs, celError(p.Child("expression"), variable.Expression, result.Error))
	}
	return errs
}

func compile(c plugincel.Compiler, accessor plugincel.ExpressionAccessor, decls plugincel.OptionalVariableDeclarations, env environment.Type, p *field.Path) field.ErrorList {
	result := c.CompileCELExpression(accessor, decls, env)
	if result.Error == nil {
		return nil
	}
	return field.ErrorList{celError(p, accessor.GetExpression(), result.Error)}
}

// StoredExpressions is the set of a stored object's expressions (as
// PolicyOptions.Stored takes them), trimmed of spaces.
func StoredExpressions(exprs ...string) sets.Set[string] {
	out := sets.New[string]()
	for _, e := range exprs {
		out.Insert(strings.TrimSpace(e))
	}
	return out
}

// envType is the environment an expression compiles in: the stored one for
// an expression the stored object already had (so a stored policy stays
// writable when the environment narrows), the new one otherwise.
func envType(stored sets.Set[string], expr string) environment.Type {
	if stored.Has(strings.TrimSpace(expr)) {
		return environment.StoredExpressions
	}
	return environment.NewExpressions
}

// celError turns a compilation error into a field error, as upstream does.
func celError(p *field.Path, expr string, err *apiservercel.Error) *field.Error {
	switch err.Type {
	case apiservercel.ErrorTypeRequired:
		return field.Required(p, err.Detail)
	case apiservercel.ErrorTypeInvalid:
		return field.Invalid(p, expr, err.Detail)
	default:
		return field.InternalError(p, err)
	}
}

var (
	celIdentifier = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)
	celReserved   = sets.New("true", "false", "null", "in", "as", "break", "const", "continue", "else",
		"for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while")
)

// isCELIdentifier is CEL's IDENT: letters, digits and underscores, not
// starting with a digit, and no reserved word.
func isCELIdentifier(name string) bool {
	return celIdentifier.MatchString(name) && !celReserved.Has(name)
}

// The expressions of a policy, with the types they must compile to as
// upstream's validating admission policy plugin has them. (That plugin's
// package is not imported for these four: it brings in the loading of
// manifest files, and a module go.mod does not list.)
type (
	// Validation is a validation's expression: a bool.
	Validation struct{ Expression string }
	// MessageExpression is a validation's messageExpression: a string.
	MessageExpression struct{ Expression string }
	// AuditAnnotation is an audit annotation's valueExpression: a string or null.
	AuditAnnotation struct{ Expression string }
	// Variable is a named expression of any type, in scope as variables.NAME.
	Variable struct{ Name, Expression string }
)

// GetExpression returns the expression.
func (v *Validation) GetExpression() string { return v.Expression }

// ReturnTypes is bool.
func (v *Validation) ReturnTypes() []*celgo.Type { return []*celgo.Type{celgo.BoolType} }

// GetExpression returns the expression.
func (m *MessageExpression) GetExpression() string { return m.Expression }

// ReturnTypes is string.
func (m *MessageExpression) ReturnTypes() []*celgo.Type { return []*celgo.Type{celgo.StringType} }

// GetExpression returns the expression.
func (a *AuditAnnotation) GetExpression() string { return a.Expression }

// ReturnTypes is string or null.
func (a *AuditAnnotation) ReturnTypes() []*celgo.Type {
	return []*celgo.Type{celgo.StringType, celgo.NullType}
}

// GetExpression returns the expression.
func (v *Variable) GetExpression() string { return v.Expression }

// GetName returns the variable's name.
func (v *Variable) GetName() string { return v.Name }

// ReturnTypes is any type.
func (v *Variable) ReturnTypes() []*celgo.Type { return []*celgo.Type{celgo.AnyType, celgo.DynType} }

var (
	_ plugincel.ExpressionAccessor      = (*Validation)(nil)
	_ plugincel.ExpressionAccessor      = (*MessageExpression)(nil)
	_ plugincel.ExpressionAccessor      = (*AuditAnnotation)(nil)
	_ plugincel.NamedExpressionAccessor = (*Variable)(nil)
)
