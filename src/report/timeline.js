(function () {
  var details = document.getElementById('details');
  function same(el) {
    return document.querySelectorAll('rect.storage[data-allocator="' + el.dataset.allocator +
                                     '"][data-storage="' + el.dataset.storage + '"]');
  }
  function mark(el, on) { same(el).forEach(function (r) { r.classList.toggle('hl', on); }); }
  document.querySelectorAll('rect.storage').forEach(function (r) {
    r.addEventListener('mouseenter', function () {
      mark(r, true);
      details.textContent = r.querySelector('title').textContent;
      details.style.display = 'block';
    });
    r.addEventListener('mouseleave', function () { mark(r, false); details.style.display = 'none'; });
  });
  document.querySelectorAll('tr.peak-row').forEach(function (row) {
    row.addEventListener('mouseenter', function () { mark(row, true); });
    row.addEventListener('mouseleave', function () { mark(row, false); });
  });
  document.body.setAttribute('data-timeline-ready', '1');
})();
