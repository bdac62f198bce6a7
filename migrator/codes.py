"""Stable codes for every site kind and refusal reason.

Codes never change meaning once published; new ones are appended.  Each entry
is (title, what the user should do).  ``docs/codes.md`` is generated from this
table by ``tests/test_docs.py`` so the two cannot drift apart.
"""
from __future__ import annotations

CODES: dict[str, tuple[str, str]] = {
    # -- migrated sites -------------------------------------------------
    "TFG001": ("gradient_override_map block rewritten to tf.custom_gradient", ""),
    "TFG002": ("RegisterGradient function turned into a plain gradient helper (registration removed)", ""),
    "TFG003": ("tf.gradients call rewritten to tf.GradientTape", ""),
    "TFG004": ("parallel_for jacobian/batch_jacobian rewritten to tape.jacobian/tape.batch_jacobian", ""),
    "TFG005": ("tf.hessians rewritten to nested tapes", ""),
    "TFG006": ("py_func with an overridden gradient rewritten to tf.custom_gradient around tf.numpy_function", ""),
    "TFG007": ("dead override removed: no op of a mapped type is created in the block", "check the op type spelling; TF1 ignored this override too"),
    # -- overrides that need a person -----------------------------------
    "TFG101": ("override block calls code whose ops cannot be known from the source",
               "wrap the op inside that code in a @tf.custom_gradient function"),
    "TFG102": ("override escapes its with-block (yield in a context manager, manual __enter__/__exit__)",
               "apply tf.custom_gradient to the ops the caller creates"),
    "TFG103": ("override map is not a literal dict of string literals",
               "write the map as a dict literal, or migrate by hand with tf.custom_gradient"),
    "TFG104": ("override map is ill-formed: TF1 itself rejects it at gradient time",
               "fix the map in TF1 first; the migrator does not guess the intent"),
    "TFG105": ("registered gradient function uses something with no TF2 equivalent (op.name, op.node_def, op.get_attr of an unknown attribute, ...)",
               "rewrite the gradient by hand as a tf.custom_gradient grad_fn"),
    "TFG106": ("gradient name in the map has no registration in this file, and the one in another project file cannot be copied here (or there is none)",
               "let the map name one registration of a plain module-level function, in this file or in a module it "
               "imports whose globals this file binds the same way; or migrate by hand"),
    "TFG107": ("graph object is not known to be a TensorFlow graph (look-alike method)",
               "nothing to do if this is not TensorFlow; otherwise enter the map on tf.get_default_graph(), or inside `with graph.as_default():`"),
    "TFG108": ("an op of an overridden type is created in a way the migrator cannot wrap (inside a library function, or with arguments it cannot map to op inputs)",
               "wrap that op in a @tf.custom_gradient function by hand"),
    "TFG109": ("the registered gradient function cannot be followed (passed as a value, registered outside a function) or serves op types it cannot be split for",
               "register one module-level def per op type, or migrate by hand"),
    "TFG110": ("gradient_override_map is entered outside a single-item with statement (through an alias, ExitStack, __enter__, several with items)",
               "use one `with g.gradient_override_map(...):` block around the ops, or migrate by hand with tf.custom_gradient"),
    "TFG111": ("which op a call or operator in the override block makes depends on dtype, static rank, list length or whether an operand is a tensor, and the source does not show it",
               "make the inputs visible (a placeholder or constant with a dtype and shape, a caller in the project), or run with --unsafe-fixes to accept the stated assumption"),
    "TFG112": ("the gradient name is used elsewhere (another file's map, a registry lookup), so its registration must stay",
               "migrate the other use in the same run first, or migrate by hand"),
    "TFG113": ("the registered gradient function is also used directly, so its (op, grad) signature must stay",
               "migrate by hand, or stop calling the gradient function directly"),
    "TFG114": ("the registration runs only on some paths (in a loop, a try, or a guard that does more than skip a second registration)",
               "define the gradient function unconditionally, or migrate by hand"),
    "TFG115": ("the program reads the wrapped op's identity (.op, .op.inputs, .name, or tensors by name); under tf.custom_gradient the output is an IdentityN",
               "read the values you need before the op, or migrate by hand"),
    "TFG116": ("the graph object the map is entered on may not be the default graph when the block runs",
               "call tf.get_default_graph() in the with statement, or run with --unsafe-fixes to accept the stated assumption"),
    "TFG117": ("the gradient function uses TF1-only code that changes meaning or does not exist when TF2 runs it eagerly (tf.Print, set_shape, sessions, a py_func form it cannot convert exactly)",
               "rewrite the gradient function in TF2 code, then re-run"),
    # -- tf.gradients that need a person --------------------------------
    "TFG120": ("ys is not computed in the same block as the tf.gradients call",
               "compute the loss inside a tf.GradientTape where the model is called"),
    "TFG121": ("tf.gradients inside a registered gradient function, tf.while_loop body or tf.cond branch",
               "keep this code in graph mode (tf.function) or restructure it around a tape"),
    "TFG122": ("an override map that was not migrated still governs this gradient; GradientTape would ignore it",
               "migrate the override first (see its own manual site), then re-run"),
    "TFG123": ("stop_gradients cannot be rewritten exactly here",
               "apply tf.stop_gradient to those tensors where ys is computed, then use a tape"),
    "TFG124": ("sources are not plain names or attributes",
               "bind the sources to names before the call, or use model.trainable_variables with a tape"),
    "TFG125": ("tf.gradients inside a loop (or comprehension) over values computed before it, where one tape "
               "cannot be lifted around them: the loop changes what it walks, or the items are not shown to be "
               "tensors made at once",
               "open the tape around the computation of each value, or bind the losses to a list display of "
               "tensors first"),
    "TFG126": ("a tape here would record nothing (ys does not depend on xs in this block)",
               "check the call: TF1 returned None for every source"),
    "TFG127": ("keras.backend.gradients is graph-only",
               "compute the loss inside a tf.GradientTape"),
    "TFG128": ("gradient call form not supported (unknown arguments, starred arguments, or used as a value)",
               "rewrite this call by hand with tf.GradientTape"),
    "TFG129": ("the rewrite is right only under an assumption the source cannot show (an unsafe fix)",
               "check the assumption named in the reason; if it holds, re-run with --unsafe-fixes"),
    "TFG130": ("a value from outside the tape's region may depend on the sources, so a tape would miss that path",
               "open the tape where that value is computed (often in the caller) and take the gradient there"),
    "TFG131": ("tf.gradients, or TF's gradient registry, is replaced at run time somewhere in the project",
               "a tape would bypass the replacement; migrate the wrapper first, then re-run"),
    "TFG132": ("the region builds v1 control flow (tf.cond, tf.while_loop, ...) in a file that still runs under a Session",
               "a tape cannot differentiate v1 control flow in TF1 graph mode; move the script to TF2 first, or keep tf.gradients"),
    "TFG133": ("a source cannot be watched before its first use",
               "bind the source to a name on a line of its own before the ops that use it"),
    "TFG134": ("the tape would span several notebook cells",
               "move the forward pass and the gradient into one cell, or migrate by hand"),
    "TFG135": ("the gradient reads TF1 graph collections (tf.trainable_variables, tf.get_collection, tf.losses.get_*), which are empty under TF2 eager",
               "use the model's own lists (model.trainable_variables, model.losses), then re-run; a file that still runs under a Session keeps them"),
    "TFG137": ("the tape's region passes back_prop=False (tf.while_loop, tf.map_fn), which eager TF2 ignores",
               "wrap that call's result in tf.stop_gradient (what TF1's back_prop=False meant), then re-run"),
    "TFG136": ("gradient API called inside an IPython magic or shell line of a notebook (`%time ...`), which is never rewritten",
               "move the call onto a plain Python line of the cell, then re-run"),
}


def title(code: str) -> str:
    return CODES[code][0]


def advice(code: str) -> str:
    return CODES[code][1]
