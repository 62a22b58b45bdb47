/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import "strings"

// TemplateResourceName is the name of the Template of name in language: name with - for _,
// a dot, and the language in lowercase with - for _ (order_update, en_US: order-update.en-us).
// The CRD holds every Template to it, so name and language identify one.
func TemplateResourceName(name, language string) string {
	return strings.ReplaceAll(name, "_", "-") + "." + strings.ReplaceAll(strings.ToLower(language), "_", "-")
}
