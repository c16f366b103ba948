/**
 * Something an optional peer package exports, loaded on first use and kept. Transports use it
 * for exception classes that a transport's filters recognise with `instanceof`, so the class must
 * be the package's own; an app that never uses the transport never loads the package.
 */
export function optionalExport<T>(load: () => Promise<T>): () => T | Promise<T> {
  let value: T | undefined;
  return () =>
    value ??
    load().then((loaded) => {
      value = loaded;
      return loaded;
    });
}

/** Builds `make(value)` now when the value is loaded, else once it is. */
export function whenLoaded<T, R>(value: T | Promise<T>, make: (value: T) => R): R | Promise<R> {
  return value instanceof Promise ? value.then(make) : make(value);
}
