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

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// USDAmount is an amount of US dollars as a decimal string of up to 6 decimals ("0.0079").
// +kubebuilder:validation:Pattern=`^[0-9]{1,7}(\.[0-9]{1,6})?$`
// +kubebuilder:validation:MaxLength=14
type USDAmount string

// Price is what one message on a channel to destinations starting with a prefix costs.
type Price struct {
	// Channel is the channel priced.
	Channel Channel `json:"channel"`
	// Prefix is the start of the destination numbers priced, in E.164 ("+1", "+4420"); "+"
	// prices every number, and is what email takes. The longest prefix that matches wins.
	// +kubebuilder:validation:Pattern=`^\+[0-9]{0,15}$`
	Prefix string `json:"prefix"`
	// Price is what the project pays per message (per SMS segment; per started minute of a
	// voice message).
	Price USDAmount `json:"price"`
	// ProviderCost is what the provider charges the installation for it (shown as the
	// message's costProvider).
	// +optional
	ProviderCost USDAmount `json:"providerCost,omitempty"`
}

// PriceListSpec is an installation's prices. The PriceList in a project's namespace prices that
// project; otherwise the one in the installation's namespace prices every project. With none,
// nothing is charged.
type PriceListSpec struct {
	// Currency of every amount: USD, as the API reports amounts.
	// +kubebuilder:validation:Enum=USD
	// +kubebuilder:default=USD
	// +optional
	Currency string `json:"currency,omitempty"`

	// FreeCredit is the credit a Free project (not a sub-account) starts with, once.
	// +kubebuilder:default="2.00"
	// +optional
	FreeCredit USDAmount `json:"freeCredit,omitempty"`

	// Prices per channel and destination prefix; one entry per pair (the API server refuses a
	// second one for the same channel and prefix).
	// +listType=map
	// +listMapKey=channel
	// +listMapKey=prefix
	// +kubebuilder:validation:MaxItems=5000
	Prices []Price `json:"prices"`

	// ProviderCosts are what each Provider charges the installation per message, by channel and
	// destination prefix: least-cost routes pick the cheapest Provider for a destination with
	// them. The longest prefix of a Provider that matches wins.
	// +listType=map
	// +listMapKey=provider
	// +listMapKey=channel
	// +listMapKey=prefix
	// +kubebuilder:validation:MaxItems=5000
	// +optional
	ProviderCosts []ProviderCost `json:"providerCosts,omitempty"`

	// ModelPrices price the installation's model: the tokens of agents of provider zavu, per
	// million, by model ("*": every model not listed). Agents on their own keys cost nothing
	// here. Without a price for its model, a zavu agent's tokens are not charged.
	// +listType=map
	// +listMapKey=model
	// +kubebuilder:validation:MaxItems=200
	// +optional
	ModelPrices []ModelPrice `json:"modelPrices,omitempty"`

	// NumberPrices price the phone numbers projects buy through the API, by country and type
	// ("*": every country, or every type, not listed). The most specific entry wins: the
	// country's and type's, then the country's "*", then "*" and the type, then "*" and "*".
	// Without one, a number is not offered for sale.
	// +listType=map
	// +listMapKey=country
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	NumberPrices []NumberPrice `json:"numberPrices,omitempty"`
}

// ProviderCost is what one Provider charges per message on a channel to destinations starting
// with a prefix.
type ProviderCost struct {
	// Provider is the Provider's name (in the project's namespace or the installation's).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Provider string `json:"provider"`
	// Channel is the channel costed.
	Channel Channel `json:"channel"`
	// Prefix is the start of the destination numbers costed, in E.164; "+" is every number.
	// +kubebuilder:validation:Pattern=`^\+[0-9]{0,15}$`
	Prefix string `json:"prefix"`
	// Cost is what the Provider charges per message (per SMS segment).
	Cost USDAmount `json:"cost"`
}

// NumberPrice is what a phone number of a country and type costs a project.
type NumberPrice struct {
	// Country is the ISO 3166-1 alpha-2 code (US, DE), or "*".
	// +kubebuilder:validation:Pattern=`^([A-Z]{2}|\*)$`
	Country string `json:"country"`
	// Type is local, mobile, national, tollFree, or "*".
	// +kubebuilder:validation:Enum=local;mobile;national;tollFree;"*"
	Type string `json:"type"`
	// Monthly is charged when the number is bought, then every month it is kept.
	Monthly USDAmount `json:"monthly"`
	// Upfront is charged once, when the number is bought.
	// +optional
	Upfront USDAmount `json:"upfront,omitempty"`
}

// ModelPrice is what a million tokens of one model cost a project.
type ModelPrice struct {
	// Model is the model id an agent names, or "*".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	Model string `json:"model"`
	// InputPerMillion and OutputPerMillion are the prices of a million input (prompt) and
	// output (answer) tokens.
	InputPerMillion  USDAmount `json:"inputPerMillion"`
	OutputPerMillion USDAmount `json:"outputPerMillion"`
}

// PriceList holds an installation's (or one project's) prices.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=prices
// +kubebuilder:printcolumn:name="Currency",type=string,JSONPath=`.spec.currency`
// +kubebuilder:printcolumn:name="Free credit",type=string,JSONPath=`.spec.freeCredit`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PriceList struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PriceListSpec `json:"spec"`
}

// PriceListList is a list of PriceLists.
// +kubebuilder:object:root=true
type PriceListList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PriceList `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PriceList{}, &PriceListList{})
}
