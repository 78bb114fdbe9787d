"""Docstrings for the public callables whose definitions are generated (op tables, factories) or too short to
carry one: one table, applied once at import (`apply()`, called by tensorlab/__init__.py), never replacing a
docstring the code already has. An in-place method `name_` without an entry gets "In-place form of name".
tests/test_docstrings.py enumerates every public callable and fails on one without a docstring.

Keys: "tl.<name>" (also the Tensor method that is the same function), "Tensor.<name>", "F.<name>"
(tensorlab.nn.functional), "nn.<name>", "linalg.<name>", "special.<name>", "optim.<name>"."""
from __future__ import annotations

DOCS = {
    # -- creation -------------------------------------------------------------------------------------
    "tl.empty": "A tensor of the given size with uninitialized values (torch.empty).",
    "tl.empty_like": "An uninitialized tensor with input's size, and its dtype/device unless given.",
    "tl.empty_strided": "An uninitialized tensor with the given sizes and strides.",
    "tl.zeros": "A tensor of the given size filled with 0.",
    "tl.zeros_like": "A tensor of input's size filled with 0 (input's dtype and device unless given).",
    "tl.ones": "A tensor of the given size filled with 1.",
    "tl.ones_like": "A tensor of input's size filled with 1 (input's dtype and device unless given).",
    "tl.full": "A tensor of the given size filled with fill_value (its dtype inferred from the value unless given).",
    "tl.full_like": "A tensor of input's size filled with fill_value.",
    "tl.eye": "A 2-D tensor with ones on the diagonal and zeros elsewhere (n x n, or n x m).",
    "tl.linspace": "steps values evenly spaced from start to end, both included.",
    "tl.logspace": "steps values base ** x for x evenly spaced from start to end.",
    "tl.frombuffer": "A 1-D tensor over the bytes of a Python buffer object (shares its memory).",
    "tl.scalar_tensor": "A 0-dim tensor holding the number s (the default float dtype unless given).",
    "tl.rand_like": "Uniform samples in [0, 1) with input's size (and dtype/device unless given).",
    "tl.randn_like": "Standard normal samples with input's size (and dtype/device unless given).",
    "tl.compile": "torch.compile's signature; tensorlab's only backend is eager: the callable is returned unchanged.",
    # -- tensor facts and settings --------------------------------------------------------------------
    "tl.is_tensor": "Whether obj is a tensorlab Tensor.",
    "tl.is_floating_point": "Whether input's dtype is a floating-point dtype.",
    "tl.numel": "The number of elements of input.",
    "tl.get_default_dtype": "The dtype floating-point factories and Python floats use (float32 unless set).",
    "tl.set_default_dtype": "Set the default floating dtype (float32 or float64, as torch allows).",
    "tl.is_grad_enabled": "Whether gradient recording is on in this thread.",
    "tl.is_inference_mode_enabled": "Whether inference mode is on in this thread.",
    "tl.initial_seed": "The seed the default generator was last seeded with.",
    "tl.set_rng_state": "Restore the default generator's state from a tensor get_rng_state returned.",
    "tl.use_deterministic_algorithms": "Refuse (or with warn_only=True, warn about) ops without a deterministic "
                                       "implementation, as torch.use_deterministic_algorithms.",
    "tl.are_deterministic_algorithms_enabled": "Whether use_deterministic_algorithms(True) is in force.",
    "tl.is_deterministic_algorithms_warn_only_enabled": "Whether use_deterministic_algorithms was set with "
                                                        "warn_only=True.",
    "tl.get_float32_matmul_precision": "The float32 matmul precision setting ('highest', 'high' or 'medium').",
    # -- arithmetic -----------------------------------------------------------------------------------
    "tl.add": "input + alpha * other, broadcast, with torch's type promotion (out= and the in-place add_ too).",
    "tl.sub": "input - alpha * other, broadcast, with torch's type promotion.",
    "tl.div": "input / other, broadcast; rounding_mode None (true division), 'trunc' or 'floor'.",
    "tl.pow": "input ** exponent elementwise; either may be a number.",
    "tl.lerp": "input + weight * (end - input): linear interpolation, elementwise.",
    "tl.addcmul": "input + value * tensor1 * tensor2, elementwise.",
    "tl.addcdiv": "input + value * tensor1 / tensor2, elementwise.",
    "tl.clamp": "input limited to [min, max] elementwise (either bound may be a number, a tensor or None).",
    "tl.clamp_": "In-place clamp.",
    "tl.clamp_min": "input limited from below by min (elementwise max).",
    "tl.clamp_min_": "In-place clamp_min.",
    "tl.clamp_max": "input limited from above by max (elementwise min).",
    "tl.clamp_max_": "In-place clamp_max.",
    "tl.round": "input rounded to the nearest integer, halves to even, or to `decimals` decimal places.",
    "tl.round_": "In-place round.",
    "tl.nan_to_num": "input with NaN, +inf and -inf replaced (by 0 and the dtype's largest/smallest finite value "
                     "unless given).",
    "tl.nan_to_num_": "In-place nan_to_num.",
    "tl.sgn": "The sign of each element (-1, 0 or 1; sign for real tensors).",
    "tl.signbit": "Whether each element's sign bit is set (True for -0.0).",
    "tl.heaviside": "The Heaviside step: 0 below zero, 1 above, `values` at zero.",
    "tl.fmax": "Elementwise maximum that ignores NaN (NaN only where both are NaN).",
    "tl.fmin": "Elementwise minimum that ignores NaN (NaN only where both are NaN).",
    "tl.gcd": "Elementwise greatest common divisor of integer tensors.",
    "tl.gcd_": "In-place gcd.",
    "tl.lcm": "Elementwise least common multiple of integer tensors.",
    "tl.lcm_": "In-place lcm.",
    "tl.bitwise_left_shift": "input << other elementwise (integer tensors).",
    "tl.bitwise_right_shift": "input >> other elementwise (arithmetic shift for signed integers).",
    "tl.isneginf": "Whether each element is -inf.",
    "tl.isposinf": "Whether each element is +inf.",
    "tl.isreal": "Whether each element is real (always True for tensorlab's real dtypes).",
    "tl.conj": "The complex conjugate; input itself for real tensors.",
    "tl.conj_physical": "The complex conjugate, computed; a copy for real tensors.",
    "tl.resolve_conj": "input with any lazy conjugation materialized (input itself for real tensors).",
    "tl.resolve_neg": "input with any lazy negation materialized (input itself for real tensors).",
    # -- reductions -----------------------------------------------------------------------------------
    "tl.sum": "The sum of all elements, or over dim (keepdim, dtype as torch).",
    "tl.nansum": "The sum treating NaN as zero.",
    "tl.mean": "The mean of all elements, or over dim (floating dtypes).",
    "tl.nanmean": "The mean of the non-NaN elements.",
    "tl.prod": "The product of all elements, or over dim.",
    "tl.std": "The standard deviation over dim (correction=1 by default: Bessel's).",
    "tl.std_mean": "(std, mean) over dim, from one pass over the data.",
    "tl.amax": "The largest value over dim (no indices; NaN propagates).",
    "tl.amin": "The smallest value over dim (no indices; NaN propagates).",
    "tl.aminmax": "(min, max) of input, or over dim.",
    "tl.argmax": "The index of the largest value, flattened or over dim (the first one on ties).",
    "tl.argmin": "The index of the smallest value, flattened or over dim (the first one on ties).",
    "tl.all": "Whether every element (over dim) is nonzero.",
    "tl.any": "Whether any element (over dim) is nonzero.",
    "tl.count_nonzero": "The number of nonzero elements, in total or over dim.",
    "tl.cumsum": "The cumulative sum along dim.",
    "tl.cumprod": "The cumulative product along dim.",
    "tl.cummax": "(values, indices): the running maximum along dim and where it was reached.",
    "tl.cummin": "(values, indices): the running minimum along dim and where it was reached.",
    "tl.logcumsumexp": "log(cumsum(exp(input))) along dim, computed without overflow.",
    "tl.log_softmax": "log(softmax(input, dim)), computed stably.",
    "tl.quantile": "The q-th quantiles of input (over dim), with torch's interpolation modes.",
    "tl.nanquantile": "quantile ignoring NaN values.",
    "tl.dist": "The p-norm of input - other.",
    "tl.cdist": "The p-norm distance between each pair of rows of x1 and x2 (batched).",
    "tl.corrcoef": "The Pearson correlation coefficients of the rows of input.",
    "tl.trapezoid": "The integral of y along dim by the trapezoidal rule (spacing dx or coordinates x).",
    "tl.trapz": "Alias of trapezoid.",
    "tl.cumulative_trapezoid": "The running trapezoidal integral of y along dim.",
    "tl.msort": "input sorted along its first dimension.",
    "tl.argsort": "The indices that sort input along dim (stable=True keeps the order of equal elements).",
    # -- linear algebra -------------------------------------------------------------------------------
    "tl.mm": "The matrix product of two 2-D tensors.",
    "tl.bmm": "Batched matrix product of two 3-D tensors.",
    "tl.mv": "The product of a matrix and a vector.",
    "tl.addmm": "beta * input + alpha * (mat1 @ mat2).",
    "tl.addmv": "beta * input + alpha * (mat @ vec).",
    "tl.addmv_": "In-place addmv.",
    "tl.addr": "beta * input + alpha * outer(vec1, vec2).",
    "tl.baddbmm": "beta * input + alpha * bmm(batch1, batch2).",
    "tl.addbmm": "beta * input + alpha * the sum over the batch of batch1[i] @ batch2[i].",
    "tl.inner": "The inner product over the last dimension of both inputs.",
    "tl.vdot": "The dot product of two 1-D tensors (the first conjugated for complex).",
    "tl.inverse": "The inverse of a square matrix (batched): torch.inverse, as linalg.inv.",
    "tl.cholesky_inverse": "The inverse of a matrix from its Cholesky factor.",
    "tl.adjoint": "The conjugate transpose of the last two dimensions (a view).",
    # -- shape and views ------------------------------------------------------------------------------
    "tl.permute": "A view with the dimensions reordered as dims.",
    "tl.t": "The transpose of a tensor of at most 2 dimensions (a view).",
    "tl.swapdims": "A view with dimensions dim0 and dim1 swapped (transpose).",
    "tl.moveaxis": "Alias of movedim.",
    "tl.squeeze": "A view without the size-1 dimensions (or just dim).",
    "tl.unsqueeze": "A view with a size-1 dimension inserted at dim.",
    "tl.flatten": "input with dimensions start_dim..end_dim merged into one (a view where the strides allow).",
    "tl.unflatten": "A view with dimension dim split into sizes.",
    "tl.ravel": "input as a contiguous 1-D tensor (a view when possible).",
    "tl.narrow": "A view of length elements of dim from start.",
    "tl.select": "A view of index along dim, without that dimension.",
    "tl.diagonal": "A view of the diagonal with the given offset of dims dim1 and dim2.",
    "tl.diagflat": "A 2-D tensor with the flattened input on its offset diagonal.",
    "tl.as_strided": "A view of input's storage with the given size, stride and storage offset.",
    "tl.broadcast_to": "A view of input expanded to size (broadcasting rules).",
    "tl.broadcast_tensors": "The tensors expanded to their common broadcast shape (views).",
    "tl.chunk": "input split into `chunks` views along dim (the last may be smaller).",
    "tl.unsafe_chunk": "chunk (tensorlab's views are always safe).",
    "tl.split": "input split into views of split_size elements along dim, or of the listed sizes.",
    "tl.unsafe_split": "split (tensorlab's views are always safe).",
    "tl.split_with_sizes": "input split into views of the listed sizes along dim.",
    "tl.unbind": "The slices of input along dim, as a tuple of views without that dimension.",
    "tl.stack": "The tensors stacked along a new dimension dim.",
    "tl.hstack": "The tensors concatenated column-wise (along dim 1, or 0 for 1-D tensors).",
    "tl.vstack": "The tensors concatenated row-wise (1-D tensors become rows).",
    "tl.row_stack": "Alias of vstack.",
    "tl.dstack": "The tensors concatenated depth-wise (along dim 2, after atleast_3d).",
    "tl.column_stack": "The tensors as columns of a 2-D tensor.",
    "tl.atleast_1d": "input, or each input, viewed with at least 1 dimension.",
    "tl.atleast_2d": "input, or each input, viewed with at least 2 dimensions.",
    "tl.atleast_3d": "input, or each input, viewed with at least 3 dimensions.",
    "tl.fliplr": "input reversed along dim 1 (a copy, as torch).",
    "tl.flipud": "input reversed along dim 0 (a copy, as torch).",
    "tl.argwhere": "The indices of the nonzero elements, one row per element.",
    "tl.clone": "A copy of input with its own memory (memory_format as torch), recorded for autograd.",
    "tl.constant_pad_nd": "input padded with `value` by the (left, right, ...) amounts in pad, last dim first.",
    # -- indexing -------------------------------------------------------------------------------------
    "tl.index_add": "A copy of input with alpha * source added at the given indices of dim.",
    "tl.index_copy": "A copy of input with source written at the given indices of dim.",
    "tl.index_fill": "A copy of input with value written at the given indices of dim.",
    "tl.index_put": "A copy of input with values written at the index tensors' positions (accumulate=True adds).",
    "tl.masked_fill": "A copy of input with value where mask is True.",
    "tl.masked_scatter": "A copy of input with source's elements, in order, where mask is True.",
    # -- nn ops at the top level ----------------------------------------------------------------------
    "tl.conv1d": "1-D convolution (torch.conv1d, as nn.functional.conv1d).",
    "tl.conv2d": "2-D convolution (torch.conv2d, as nn.functional.conv2d).",
    "tl.conv_transpose1d": "1-D transposed convolution.",
    "tl.conv_transpose2d": "2-D transposed convolution.",
    "tl.avg_pool1d": "1-D average pooling.",
    "tl.max_pool1d": "1-D max pooling.",
    "tl.max_pool2d": "2-D max pooling.",
    "tl.adaptive_avg_pool1d": "1-D average pooling to a given output size.",
    # -- Tensor-only methods --------------------------------------------------------------------------
    "Tensor.T": "The tensor with its dimensions reversed (a view; deprecated by torch beyond 2 dimensions).",
    "Tensor.H": "The conjugate transpose of a matrix (a view).",
    "Tensor.mT": "The transpose of the last two dimensions (a view).",
    "Tensor.mH": "The conjugate transpose of the last two dimensions (a view).",
    "Tensor.shape": "The tensor's size, a tl.Size.",
    "Tensor.size": "The tensor's size, or the size of dimension dim.",
    "Tensor.stride": "The strides in elements, or the stride of dimension dim.",
    "Tensor.storage_offset": "The offset in elements of the first element in the storage.",
    "Tensor.dim": "The number of dimensions.",
    "Tensor.ndimension": "The number of dimensions (alias of dim).",
    "Tensor.ndim": "The number of dimensions.",
    "Tensor.nelement": "The number of elements (alias of numel).",
    "Tensor.element_size": "The size in bytes of one element.",
    "Tensor.itemsize": "The size in bytes of one element.",
    "Tensor.nbytes": "The bytes the tensor's elements occupy (numel * itemsize).",
    "Tensor.dtype": "The tensor's element type.",
    "Tensor.device": "The device the tensor's storage is on.",
    "Tensor.is_cpu": "Whether the tensor is on the CPU.",
    "Tensor.is_cuda": "Whether the tensor is on a CUDA device.",
    "Tensor.is_contiguous": "Whether the elements lie in row-major order without gaps (or in memory_format's).",
    "Tensor.is_complex": "Whether the dtype is complex.",
    "Tensor.is_floating_point": "Whether the dtype is floating point.",
    "Tensor.is_signed": "Whether the dtype is signed.",
    "Tensor.is_leaf": "Whether the tensor is a leaf of the autograd graph (created by the user, or not "
                      "requiring grad).",
    "Tensor.is_inference": "Whether the tensor was created in inference mode.",
    "Tensor.requires_grad": "Whether autograd records operations on this tensor.",
    "Tensor.requires_grad_": "Set requires_grad in place (leaves only) and return the tensor.",
    "Tensor.retains_grad": "Whether retain_grad() was called on this non-leaf tensor.",
    "Tensor.grad": "The gradient accumulated by backward(), or None.",
    "Tensor.output_nr": "The index of this tensor among the outputs of the node that made it.",
    "Tensor.data_ptr": "The address of the first element.",
    "Tensor.untyped_storage": "The UntypedStorage under the tensor.",
    "Tensor.item": "The value of a one-element tensor as a Python number (a host wait on CUDA).",
    "Tensor.tolist": "The values as nested Python lists (a host wait on CUDA).",
    "Tensor.numpy": "A NumPy array sharing a CPU tensor's memory (force=True copies from any device).",
    "Tensor.cpu": "The tensor on the CPU (itself when it is there already).",
    "Tensor.cuda": "The tensor on a CUDA device (the current one unless given).",
    "Tensor.contiguous": "The tensor itself when contiguous (in memory_format), else a contiguous copy.",
    "Tensor.type": "The type name ('torch.FloatTensor' style) with no argument, else a copy converted to dtype.",
    "Tensor.type_as": "The tensor converted to other's dtype.",
    "Tensor.float": "The tensor as float32.",
    "Tensor.double": "The tensor as float64.",
    "Tensor.half": "The tensor as float16.",
    "Tensor.bfloat16": "The tensor as bfloat16.",
    "Tensor.int": "The tensor as int32.",
    "Tensor.long": "The tensor as int64.",
    "Tensor.short": "The tensor as int16.",
    "Tensor.char": "The tensor as int8.",
    "Tensor.byte": "The tensor as uint8.",
    "Tensor.bool": "The tensor as bool.",
    "Tensor.expand": "A view with size-1 dimensions repeated to size (-1 keeps a dimension), without copying.",
    "Tensor.expand_as": "A view expanded to other's size.",
    "Tensor.view_as": "A view with other's size.",
    "Tensor.reshape_as": "The tensor reshaped to other's size.",
    "Tensor.flip": "The tensor reversed along dims (a copy).",
    "Tensor.unfold": "A view of every window of `size` elements, `step` apart, along dimension.",
    "Tensor.where": "where(condition, self, other).",
    "Tensor.new_empty": "An uninitialized tensor of the given size with this tensor's dtype and device.",
    "Tensor.new_zeros": "Zeros of the given size with this tensor's dtype and device.",
    "Tensor.new_ones": "Ones of the given size with this tensor's dtype and device.",
    "Tensor.new_full": "fill_value in a tensor of the given size with this tensor's dtype and device.",
    "Tensor.new_empty_strided": "An uninitialized tensor of the given size and strides with this tensor's dtype and "
                                "device.",
    "Tensor.exponential_": "Fill with samples of the exponential distribution of rate lambd.",
    "Tensor.normal_": "Fill with samples of the normal distribution N(mean, std**2).",
    "Tensor.put_": "Write source at the flattened indices of the tensor (accumulate=True adds).",
    "Tensor.scatter_": "Write src (or value) into the tensor at the index positions along dim (reduce= combines).",
    "Tensor.scatter_add_": "Add src into the tensor at the index positions along dim.",
    "Tensor.masked_fill_": "Write value where mask is True.",
    # -- nn.functional --------------------------------------------------------------------------------
    "F.relu": "max(x, 0) elementwise.",
    "F.relu6": "min(max(x, 0), 6) elementwise.",
    "F.sigmoid": "1 / (1 + exp(-x)) elementwise.",
    "F.tanh": "The hyperbolic tangent, elementwise.",
    "F.silu": "x * sigmoid(x) (swish), elementwise.",
    "F.gelu": "x * Phi(x), the Gaussian error linear unit (approximate='tanh' for the tanh form).",
    "F.selu": "The scaled exponential linear unit (torch's alpha and scale).",
    "F.celu": "max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).",
    "F.glu": "The gated linear unit: the first half of dim times the sigmoid of the second half.",
    "F.hardshrink": "x where |x| > lambd, else 0.",
    "F.softshrink": "x - lambd above lambd, x + lambd below -lambd, else 0.",
    "F.hardsigmoid": "relu6(x + 3) / 6, elementwise.",
    "F.hardswish": "x * relu6(x + 3) / 6, elementwise.",
    "F.softsign": "x / (1 + |x|), elementwise.",
    "F.tanhshrink": "x - tanh(x), elementwise.",
    "F.threshold": "x where x > threshold, else value.",
    "F.prelu": "max(0, x) + weight * min(0, x), one weight per channel (or one for all).",
    "F.softmax": "exp(x) / sum(exp(x)) along dim.",
    "F.softmin": "softmax(-x) along dim.",
    "F.log_softmax": "log(softmax(x)) along dim, computed stably.",
    "F.mse_loss": "The mean (or sum, or none) of the squared differences.",
    "F.l1_loss": "The mean (or sum, or none) of the absolute differences.",
    "F.nll_loss": "The negative log-likelihood loss of log-probabilities against class indices (weight, "
                  "ignore_index, reduction as torch).",
    "F.poisson_nll_loss": "The Poisson negative log-likelihood loss.",
    "F.gaussian_nll_loss": "The Gaussian negative log-likelihood loss with predicted variances.",
    "F.margin_ranking_loss": "max(0, -target * (input1 - input2) + margin), reduced.",
    "F.hinge_embedding_loss": "The hinge embedding loss for targets of 1 and -1.",
    "F.soft_margin_loss": "log(1 + exp(-target * input)), reduced.",
    "F.cosine_embedding_loss": "The cosine embedding loss for targets of 1 and -1.",
    "F.multilabel_soft_margin_loss": "The multi-label one-versus-all loss from logits.",
    "F.triplet_margin_loss": "max(d(a, p) - d(a, n) + margin, 0) with the p-norm distance, reduced.",
    "F.triplet_margin_with_distance_loss": "The triplet margin loss with a distance function of the caller's.",
    "F.dropout1d": "Zero whole channels of a (N, C, L) input with probability p (training only).",
    "F.dropout2d": "Zero whole channels of a (N, C, H, W) input with probability p (training only).",
    "F.dropout3d": "Zero whole channels of a (N, C, D, H, W) input with probability p (training only).",
    "F.alpha_dropout": "Dropout that keeps the mean and variance of SELU activations (training only).",
    "F.feature_alpha_dropout": "Alpha dropout of whole channels (training only).",
    "F.avg_pool2d": "2-D average pooling.",
    "F.adaptive_avg_pool2d": "2-D average pooling to a given output size.",
    "F.adaptive_max_pool1d": "1-D max pooling to a given output size (return_indices for the positions).",
    "F.adaptive_max_pool2d": "2-D max pooling to a given output size (return_indices for the positions).",
    "F.adaptive_max_pool1d_with_indices": "adaptive_max_pool1d returning (values, indices).",
    "F.adaptive_max_pool2d_with_indices": "adaptive_max_pool2d returning (values, indices).",
    "F.max_pool1d_with_indices": "max_pool1d returning (values, indices).",
    "F.max_pool2d_with_indices": "max_pool2d returning (values, indices).",
    "F.max_unpool1d": "The inverse of max_pool1d: values scattered to their indices, zeros elsewhere.",
    "F.max_unpool2d": "The inverse of max_pool2d: values scattered to their indices, zeros elsewhere.",
    "F.max_unpool3d": "The inverse of max_pool3d: values scattered to their indices, zeros elsewhere.",
    "F.interpolate": "Resize by size or scale_factor: nearest, linear, bilinear, bicubic, trilinear, area modes.",
    "F.upsample_nearest": "Deprecated alias: interpolate(mode='nearest').",
    "F.upsample_bilinear": "Deprecated alias: interpolate(mode='bilinear', align_corners=True).",
    "F.pixel_shuffle": "(N, C*r*r, H, W) rearranged to (N, C, H*r, W*r).",
    "F.pixel_unshuffle": "(N, C, H*r, W*r) rearranged to (N, C*r*r, H, W).",
    "F.channel_shuffle": "The channels split into groups and interleaved.",
    # -- 3-D convolution and pooling, grid sampling, bags, CTC --------------------------------------
    "tl.conv3d": "3-D convolution over (N, C, D, H, W) inputs (stride, padding incl. 'same'/'valid', dilation, groups).",
    "tl.conv_transpose3d": "3-D transposed convolution (the gradient of conv3d with respect to its input).",
    "tl.max_pool3d": "3-D max pooling (kernel, stride, padding, dilation, ceil_mode; return_indices).",
    "F.conv3d": "3-D convolution over (N, C, D, H, W) inputs (stride, padding incl. 'same'/'valid', dilation, groups).",
    "F.conv_transpose3d": "3-D transposed convolution (output_padding, groups, dilation).",
    "F.max_pool3d": "3-D max pooling (kernel, stride, padding, dilation, ceil_mode; return_indices).",
    "F.max_pool3d_with_indices": "max_pool3d returning (values, indices into each D*H*W plane).",
    "F.avg_pool3d": "3-D average pooling (count_include_pad, divisor_override).",
    "F.adaptive_avg_pool3d": "3-D average pooling to a given output size.",
    "F.adaptive_max_pool3d": "3-D max pooling to a given output size (return_indices for the positions).",
    "F.adaptive_max_pool3d_with_indices": "adaptive_max_pool3d returning (values, indices).",
    "F.fractional_max_pool2d": "Fractional max pooling (Graham): pseudo-random pooling regions of an output size or "
                               "ratio; _random_samples fixes them.",
    "F.fractional_max_pool2d_with_indices": "fractional_max_pool2d returning (values, indices).",
    "F.fractional_max_pool3d": "3-D fractional max pooling; _random_samples fixes the regions.",
    "F.fractional_max_pool3d_with_indices": "fractional_max_pool3d returning (values, indices).",
    "F.grid_sample": "Sample input at the grid's normalized (x, y[, z]) positions: bilinear, nearest or bicubic; zeros, "
                     "border or reflection padding; align_corners.",
    "F.affine_grid": "The sampling grid of a batch of affine matrices theta for an output size (for grid_sample).",
    "F.embedding_bag": "Sums, means or maxima of bags of embeddings (offsets or 2-D input, per_sample_weights, "
                       "padding_idx) without materializing the embeddings.",
    "F.ctc_loss": "The connectionist temporal classification loss of log-probabilities (T, N, C) against unaligned "
                  "targets (blank, reduction, zero_infinity).",
    "tl.grid_sampler": "grid_sample with integer interpolation and padding codes (torch.grid_sampler).",
    "tl.grid_sampler_2d": "grid_sample of 4-D input with integer mode codes (torch.grid_sampler_2d).",
    "tl.grid_sampler_3d": "grid_sample of 5-D input with integer mode codes (torch.grid_sampler_3d).",
    "tl.affine_grid_generator": "affine_grid with the size as a list (torch.affine_grid_generator).",
    # -- other namespaces -----------------------------------------------------------------------------
    "nn.Parameter": "A tensor that a Module registers as a parameter (requires_grad=True by default).",
    "nn.Buffer": "A tensor that a Module registers as a buffer when assigned as an attribute.",
    "linalg.eigvalsh": "The eigenvalues of a symmetric (Hermitian) matrix, ascending.",
    "linalg.tensorinv": "The inverse of a tensor for tensordot over ind dimensions.",
    "linalg.tensorsolve": "x with tensordot(A, x, x.ndim) = B.",
    "special.erf": "The error function.",
    "special.exp2": "2 ** x.",
    "special.expit": "The logistic sigmoid 1 / (1 + exp(-x)).",
    "special.expm1": "exp(x) - 1, accurate near 0.",
    "special.log1p": "log(1 + x), accurate near 0.",
    "special.log_softmax": "log(softmax(x)) along dim.",
    "special.logsumexp": "log(sum(exp(x))) over dim, computed stably.",
    "special.round": "round(x, decimals).",
    "special.softmax": "softmax(x) along dim.",
    # -- complex numbers and FFT ----------------------------------------------------------------------
    "tl.is_complex": "Whether input's dtype is complex (complex64 or complex128).",
    "Tensor.cfloat": "The tensor as complex64.",
    "Tensor.cdouble": "The tensor as complex128.",
    "Tensor.chalf": "complex32 (torch's chalf): tensorlab has no complex32 dtype, so this raises TypeError naming "
                    "complex64 as the alternative.",
    "fft.fft2": "The 2-D discrete Fourier transform over dim (the last two by default); s pads or trims.",
    "fft.ifft2": "The inverse of fft2.",
    "fft.rfft2": "fft2 of a real input, keeping the non-negative frequencies of the last dimension.",
    "fft.irfft2": "The inverse of rfft2: a real output (s gives its size).",
    "fft.hfft2": "The 2-D transform of a Hermitian-symmetric signal given by its half: a real output.",
    "fft.ihfft2": "The inverse of hfft2: the half spectrum of a real input.",
    "optim.Optimizer": "The base class of optimizers: parameter groups, state, step/zero_grad/state_dict as torch.",
    "optim.SGD": "Stochastic gradient descent with momentum, dampening, Nesterov and weight decay (torch's update).",
    "optim.Adam": "Adam (torch's update; amsgrad, weight decay added to the gradient).",
    "optim.AdamW": "Adam with decoupled weight decay.",
    "optim.Adadelta": "Adadelta (torch's update).",
    "optim.Adagrad": "Adagrad (torch's update).",
    "optim.RMSprop": "RMSprop (torch's update; centered and momentum options).",
    "optim.NAdam": "Adam with Nesterov momentum (torch's update).",
    "optim.RAdam": "Rectified Adam (torch's update).",
}


def _namespaces():
    import tensorlab as tl
    from .nn import functional as F
    return {"tl": tl, "Tensor": tl.Tensor, "F": F, "nn": tl.nn, "linalg": tl.linalg, "special": tl.special,
            "optim": tl.optim, "fft": tl.fft}


def _set(obj, owner, name, text):
    """Give obj its docstring (a property's on the property itself); False where Python refuses."""
    try:
        obj.__doc__ = text
        return True
    except (AttributeError, TypeError):
        return False


def apply():
    """Set every table docstring whose object has none, and "In-place form of X" on in-place methods without
    one. Returns the keys whose object does not exist (the table's test asserts there are none)."""
    import inspect
    spaces = _namespaces()
    missing = []
    for key, text in DOCS.items():
        space, _, name = key.partition(".")
        owner = spaces[space]
        obj = inspect.getattr_static(owner, name, None) if isinstance(owner, type) else getattr(owner, name, None)
        if obj is None:
            missing.append(key)
            continue
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        if not (obj.__doc__ or "").strip():
            _set(obj, owner, name, text)
    T = spaces["Tensor"]
    tl = spaces["tl"]
    for name in dir(T):  # a method that is a wrapper of (or twin to) tl.<name> says what tl.<name> says
        if name.startswith("_"):
            continue
        obj = inspect.getattr_static(T, name, None)
        fn = getattr(tl, name, None)
        if callable(obj) and callable(fn) and not (getattr(obj, "__doc__", None) or "").strip() \
                and (getattr(fn, "__doc__", None) or "").strip():
            _set(obj, T, name, fn.__doc__)
    for name in dir(T):
        if not name.endswith("_") or name.startswith("_"):
            continue
        obj = inspect.getattr_static(T, name, None)
        if callable(obj) and not (getattr(obj, "__doc__", None) or "").strip():
            base = name[:-1]
            _set(obj, T, name, f"In-place form of {base}: the result is written into self, which is returned "
                               f"(torch's Tensor.{name}).")
    return missing
