// Package pagelang picks the language of the pages the api role serves to people rather than
// programs (the invitation's connection page, the unsubscribe page): a translation where one
// exists, else English.
package pagelang

import "golang.org/x/text/language"

// The pages' languages: English first (the fallback), then the translations.
var (
	languages = []language.Tag{language.English, language.Spanish}
	matcher   = language.NewMatcher(languages)
)

// Of is the language ("en", "es") for a request's Accept-Language.
func Of(acceptLanguage string) string {
	tags, _, _ := language.ParseAcceptLanguage(acceptLanguage)
	_, i, _ := matcher.Match(tags...)
	base, _ := languages[i].Base()
	return base.String()
}
