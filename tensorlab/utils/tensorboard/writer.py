"""SummaryWriter: torch.utils.tensorboard's writer for the summaries training scripts log
(add_scalar, add_scalars, add_histogram, add_text, add_image(s), add_figure, add_hparams), as TensorBoard event files written by the
`tensorboard` package's EventFileWriter and protos; the values, tags, steps and directory layout
are torch's (add_scalars writes one run per series under log_dir/<main_tag>_<tag>), so
TensorBoard shows the same charts for a script run under torch or tensorlab."""
from __future__ import annotations

import os
import socket
import time
from datetime import datetime

import numpy as np


def _tensorboard():
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as e:
        raise ImportError("tl.utils.tensorboard.SummaryWriter writes TensorBoard event files through the "
                          "`tensorboard` package, which is not installed: pip install tensorboard") from e
    return event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, EventFileWriter


def _default_bins():
    """TensorBoard's default histogram buckets: +-1e-12 growing by 10% up to 1e20, and 0."""
    pos = []
    v = 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-x for x in reversed(pos)] + [0] + pos


def _numpy(values):
    from ...tensor import Tensor
    if isinstance(values, Tensor):
        return values.detach().cpu().numpy()
    if hasattr(values, "detach") and hasattr(values, "cpu"):  # a torch tensor handed over by a mixed script
        return values.detach().cpu().numpy()
    return np.asarray(values)


def _scalar(value):
    a = _numpy(value).squeeze()
    if a.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given size: {a.size} and "
                             f"{a.ndim} dimensions.")
    return float(a)


def _tile(nchw, per_row=8):
    """N images (N, C, H, W) on one canvas, per_row to a row, gray ones made RGB."""
    if nchw.shape[1] == 1:
        nchw = np.repeat(nchw, 3, axis=1)
    if nchw.ndim != 4 or nchw.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    n, _, h, w = nchw.shape
    cols = min(n, per_row)
    rows = -(-n // cols)
    canvas = np.zeros((3, h * rows, w * cols), dtype=nchw.dtype)
    for k in range(n):
        r, c = divmod(k, cols)
        canvas[:, r * h:(r + 1) * h, c * w:(c + 1) * w] = nchw[k]
    return canvas


def _to_hwc(a, dataformats):
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt):
        raise AssertionError(f"You can not use the same dimension shorthand twice. input_format: {dataformats}")
    if a.ndim != len(fmt):
        raise AssertionError(f"size of input tensor and input format are different. tensor shape: {a.shape}, "
                             f"input_format: {dataformats}")
    if len(fmt) == 4:
        return _tile(a.transpose([fmt.index(ch) for ch in "NCHW"])).transpose(1, 2, 0)
    if len(fmt) == 3:
        hwc = a.transpose([fmt.index(ch) for ch in "HWC"])
        return np.concatenate([hwc] * 3, axis=2) if hwc.shape[2] == 1 else hwc
    hw = a.transpose([fmt.index(ch) for ch in "HW"])
    return np.stack([hw] * 3, axis=2)


def _png(hwc):
    import io

    from PIL import Image
    image = Image.fromarray(hwc)
    # the same Lanczos pass at scale 1 that torch's writer makes, so the PNG bytes are the same
    image = image.resize((hwc.shape[1], hwc.shape[0]), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def _figure_pixels(figure, close):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    w, h = figure.canvas.get_width_height()
    rgb = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8).reshape(h, w, 4)[:, :, :3]
    if close:
        import matplotlib.pyplot as plt
        plt.close(figure)
    return np.moveaxis(rgb, 2, 0)


def _hparams_summaries(summary_pb2, hparams, metrics, discrete):
    """The experiment, session-start and session-end summaries of the HParams plugin."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2
    if not isinstance(discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in discrete.items():
        if k not in hparams or not isinstance(v, list) or not all(isinstance(d, type(hparams[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")
    start = plugin_data_pb2.SessionStartInfo()
    infos = []
    for k, v in hparams.items():
        if v is None:
            continue
        if isinstance(v, (int, float)):  # bools too, as torch files them (bool is an int)
            field, kind = "number_value", "DATA_TYPE_FLOAT64"
        elif isinstance(v, str):
            field, kind = "string_value", "DATA_TYPE_STRING"
        elif hasattr(v, "numel") and hasattr(v, "detach"):
            v, field, kind = _numpy(v).reshape(-1)[0], "number_value", "DATA_TYPE_FLOAT64"
            discrete = {kk: vv for kk, vv in discrete.items() if kk != k}
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        setattr(start.hparams[k], field, v)
        domain = None
        if k in discrete:
            domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d}) for d in discrete[k]])
        infos.append(api_pb2.HParamInfo(name=k, type=api_pb2.DataType.Value(kind), domain_discrete=domain))

    def tagged(tag, **content):
        data = plugin_data_pb2.HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **content)
        meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(
            plugin_name=metadata.PLUGIN_NAME, content=data.SerializeToString()))
        return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, metadata=meta)])

    experiment = api_pb2.Experiment(hparam_infos=infos, metric_infos=[
        api_pb2.MetricInfo(name=api_pb2.MetricName(tag=k)) for k in metrics])
    end = plugin_data_pb2.SessionEndInfo(status=api_pb2.Status.Value("STATUS_SUCCESS"))
    return [tagged(metadata.EXPERIMENT_TAG, experiment=experiment),
            tagged(metadata.SESSION_START_INFO_TAG, session_start_info=start),
            tagged(metadata.SESSION_END_INFO_TAG, session_end_info=end)]


class SummaryWriter:
    """Write TensorBoard summaries to `log_dir` (default runs/<date>_<host><comment>)."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120, filename_suffix=""):
        self._pb = _tensorboard()
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", stamp + "_" + socket.gethostname() + comment)
        self.log_dir = os.fspath(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self._bins = None
        self._writers = {}
        self._writer(self.log_dir)  # the event file exists from construction on, as torch's
        if purge_step is not None:
            # a restart marker at purge_step: TensorBoard drops the events an earlier run logged after it
            event_pb2 = self._pb[0]
            w = self._writer(self.log_dir)
            w.add_event(event_pb2.Event(step=purge_step, file_version="brain.Event:2"))
            w.add_event(event_pb2.Event(step=purge_step,
                                        session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START)))

    # -- the files ---------------------------------------------------------------------------------
    def _writer(self, log_dir):
        w = self._writers.get(log_dir)
        if w is None:
            w = self._writers[log_dir] = self._pb[4](log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
        return w

    def _add(self, log_dir, summary, step, walltime):
        event = self._pb[0].Event(wall_time=time.time() if walltime is None else walltime, summary=summary)
        if step is not None:
            event.step = int(step)
        self._writer(log_dir).add_event(event)

    def get_logdir(self):
        return self.log_dir

    # -- summaries ---------------------------------------------------------------------------------
    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False, double_precision=False):
        """One point of the series `tag` at `global_step`."""
        summary_pb2, tensor_pb2 = self._pb[1], self._pb[2]
        value = _scalar(scalar_value)
        if new_style:
            proto = (tensor_pb2.TensorProto(double_val=[value], dtype="DT_DOUBLE") if double_precision else
                     tensor_pb2.TensorProto(float_val=[value], dtype="DT_FLOAT"))
            meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
            summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, tensor=proto, metadata=meta)])
        else:
            summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
        self._add(self.log_dir, summary, global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Several series in one chart: each key of tag_scalar_dict is a run log_dir/<main_tag>_<key>."""
        summary_pb2 = self._pb[1]
        walltime = time.time() if walltime is None else walltime
        for tag, value in tag_scalar_dict.items():
            run = os.path.join(self.log_dir, main_tag.replace("/", "_") + "_" + tag)
            summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=main_tag, simple_value=_scalar(value))])
            self._add(run, summary, global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        """The distribution of `values` (bins: 'tensorflow' = TensorBoard's default buckets, or any
        numpy.histogram bins)."""
        summary_pb2 = self._pb[1]
        if isinstance(bins, str) and bins == "tensorflow":
            if self._bins is None:
                self._bins = _default_bins()
            bins = self._bins
        hist = self._histogram(_numpy(values).astype(float).reshape(-1), bins, max_bins)
        self._add(self.log_dir, summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, histo=hist)]),
                  global_step, walltime)

    def _histogram(self, values, bins, max_bins):
        if values.size == 0:
            raise ValueError("The input has no element.")
        counts, edges = np.histogram(values, bins=bins)
        if max_bins is not None and len(counts) > max_bins:
            group = len(counts) // max_bins
            pad = (-len(counts)) % group
            counts = np.pad(counts, (0, pad)).reshape(-1, group).sum(axis=1)
            edges = np.append(edges[:-1:group], edges[-1])
        filled = np.flatnonzero(counts)
        if filled.size == 0:
            raise ValueError("The histogram is empty: no value falls in the bins given")
        first, last = int(filled[0]), int(filled[-1])
        # TensorBoard's buckets are (previous limit, limit]: one empty bucket ends at the first value's bin
        if first > 0:
            kept, limits = counts[first - 1:last + 1], edges[first:last + 2]
        else:
            kept, limits = np.concatenate([[0], counts[:last + 1]]), edges[:last + 2]
        return self._pb[1].HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                                          sum_squares=values.dot(values), bucket_limit=limits.tolist(),
                                          bucket=kept.tolist())

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Text (markdown) shown in TensorBoard's Text tab, under <tag>/text_summary as torch writes it."""
        summary_pb2, tensor_pb2, shape_pb2 = self._pb[1], self._pb[2], self._pb[3]
        from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
        meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(
            plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
        proto = tensor_pb2.TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf_8")],
                                       tensor_shape=shape_pb2.TensorShapeProto(
                                           dim=[shape_pb2.TensorShapeProto.Dim(size=1)]))
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag + "/text_summary", metadata=meta,
                                                                       tensor=proto)])
        self._add(self.log_dir, summary, global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """An image (dataformats CHW, HWC, HW, or NCHW / NHWC tiled 8 per row): float values in [0, 1]
        are scaled to 0..255, uint8 kept; written as PNG (needs Pillow)."""
        summary_pb2 = self._pb[1]
        pixels = _to_hwc(_numpy(img_tensor), dataformats)
        scale = 1 if pixels.dtype == np.uint8 else 255
        pixels = (pixels.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
        image = summary_pb2.Summary.Image(height=pixels.shape[0], width=pixels.shape[1], colorspace=pixels.shape[2],
                                          encoded_image_string=_png(pixels))
        self._add(self.log_dir, summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, image=image)]),
                  global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """A batch of images, tiled 8 per row into one image."""
        self.add_image(tag, img_tensor, global_step, walltime, dataformats)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """A matplotlib figure (or a list of them, tiled) rendered to an image."""
        if isinstance(figure, (list, tuple)):
            self.add_image(tag, np.stack([_figure_pixels(f, close) for f in figure]), global_step, walltime,
                           dataformats="NCHW")
        else:
            self.add_image(tag, _figure_pixels(figure, close), global_step, walltime, dataformats="CHW")

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None, global_step=None):
        """A hyperparameter session for TensorBoard's HParams tab, in its own run (log_dir/run_name,
        default the time): the hyperparameters (numbers, incl. bools and one-element tensors, and
        strings), the metrics' names, and each metric as a scalar."""
        if not isinstance(hparam_dict, dict):
            raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
        if not isinstance(metric_dict, dict):
            raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
        summaries = _hparams_summaries(self._pb[1], hparam_dict, metric_dict, hparam_domain_discrete or {})
        run = os.path.join(self.log_dir, run_name or str(time.time()))
        with SummaryWriter(log_dir=run) as w:
            for summary in summaries:
                w._add(run, summary, global_step, None)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    # -- lifetime ----------------------------------------------------------------------------------
    def flush(self):
        """Write the queued events to disk."""
        for w in self._writers.values():
            w.flush()

    def close(self):
        """Flush and close every event file (a closed writer writes nothing more)."""
        for w in self._writers.values():
            w.flush()
            w.close()
        self._writers = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
