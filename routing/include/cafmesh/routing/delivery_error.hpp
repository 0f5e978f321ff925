#pragma once

/// @file
/// How a delivery sent by an application failed, as that application sees it: the typed
/// error that `send` and `request` (correlating_entry.hpp) answer instead of a payload. It
/// travels inside a `caf::error` of category `delivery_error_category()`, so CAF's
/// `.then(ok, err)` and `.receive(ok, err)` carry it; `delivery_error_of(err)` recovers it.
/// docs/hosting.md "Sending".

#include <string>

#include <caf/atom.hpp>
#include <caf/error.hpp>

#include "cafmesh/routing/verdict.hpp"

namespace cafmesh::routing {

/// One delivery's failure.
struct delivery_error {
  /// The NACK's verdict; `failed` for a deadline or an error that is no NACK.
  routing::verdict verdict = verdict::failed;
  /// What happened, in words (the NACK's message, the entry's refusal, the deadline).
  std::string text;
  /// The same delivery may be sent again: the verdict is transient (`shutting_down`,
  /// `unavailable`), so the target did not take it in.
  bool resendable = false;
  /// No answer came within the request's timeout: the outcome is unknown (never
  /// resendable, the target may have processed it).
  bool deadline = false;
};

/// The `caf::error` category of delivery errors (`cmdelivery`).
caf::atom_value delivery_error_category();

/// `x` inside a `caf::error`: code = the verdict + 1 (CAF's code 0 means "no error"),
/// context = (text, resendable, deadline).
caf::error to_error(const delivery_error& x);

/// Recovers the delivery error carried by `err`. Any other error (CAF's own, a `fault`)
/// maps to verdict `failed`, not resendable, with `fallback_text` (e.g. `sys.render(err)`)
/// as its text; no error at all to `failed` with the text `no error`.
delivery_error delivery_error_of(const caf::error& err, const std::string& fallback_text = {});

/// Renders `{verdict}: {text}` plus ` (resendable)` or ` (deadline)`.
std::string to_string(const delivery_error& x);

} // namespace cafmesh::routing
