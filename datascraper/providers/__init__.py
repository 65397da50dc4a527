"""The model providers behind one small interface (`base.ModelProvider`), and what callers use of them.

`registry` reads a model setting (`provider:model`) and gives the provider that serves it; `structured`
asks any of them for a strict structured answer; `lifecycle` checks the configured models against each
provider's own list; `warm_up` prepares the configured providers as a process starts; `breaker` notices a
hung provider once. Each provider is one module or package beside them (`openai/`); nothing above this
package imports a provider's SDK, or knows which provider answered.
"""
